// Runs a command in a process group of its own with a time limit. A test run that hangs leaves
// workers behind (vitest's pool, a child a test started): killing only the direct child would
// leave them running and holding the CPU for the mutants after it, so the whole group is killed.
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const TAIL_CHARS = 4000;

/** Sends SIGKILL to the group led by `pid`; a group already gone is not an error. */
export function killGroup(pid) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch (error) {
    if (error.code !== 'ESRCH') throw error;
  }
}

/**
 * Resolves `{ code, timedOut, tail, durationMs }` once the command exits or `timeoutMs` passes
 * (then the group is killed and `timedOut` is true). `tail` is the last output, stdout and stderr
 * interleaved, for a report. Whatever the group still runs after the command exits is killed too.
 * `onGroup(pid)` learns the group as it starts and `onGroup(undefined)` as it ends, so a caller
 * interrupted meanwhile (Ctrl-C does not reach a group of its own) can kill it.
 */
export function runInGroup(command, args, { cwd, env = process.env, timeoutMs, onGroup }) {
  if (!(timeoutMs > 0)) throw new RangeError('runInGroup: timeoutMs must be positive');
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    onGroup?.(child.pid);
    let tail = '';
    const keep = (chunk) => {
      tail = (tail + chunk.toString('utf8')).slice(-TAIL_CHARS);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      onGroup?.(undefined);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      killGroup(child.pid);
      onGroup?.(undefined);
      resolve({ code, timedOut, tail, durationMs: performance.now() - started });
    });
  });
}
