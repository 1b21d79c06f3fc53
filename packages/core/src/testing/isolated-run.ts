import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

/**
 * Script text for `runIsolated` that starts a 20 ms interval timer and defines
 * `worstLateMs()`, the worst lateness of that timer so far: how a test shows the event loop stayed
 * free while a hostile call ran. Call `stopLoopProbe()` before the script ends.
 */
export const LOOP_PROBE_SCRIPT = `
  let loopProbeLast = performance.now();
  let loopProbeWorst = 0;
  const loopProbe = setInterval(() => {
    const now = performance.now();
    loopProbeWorst = Math.max(loopProbeWorst, now - loopProbeLast - 20);
    loopProbeLast = now;
  }, 20);
  const worstLateMs = () => loopProbeWorst;
  const stopLoopProbe = () => clearInterval(loopProbe);
`;

export interface IsolatedRunOptions {
  /**
   * An ES module body, run in a fresh Node process. It may import workspace packages
   * (`@sbx/core`, `@sbx/local`, ...): they resolve to their TypeScript sources, loaded through
   * tsx, so no build is needed. Whatever it prints to stdout is returned.
   */
  script: string;
  /**
   * Wall clock after which the child is killed with SIGKILL. Default 60 s: starting a TypeScript
   * child takes seconds on a loaded machine; a catastrophic case still never ends.
   */
  timeoutMs?: number;
  /** `--max-old-space-size` of the child, in MB. Default 256. */
  maxOldSpaceMb?: number;
  /** Working directory; must be inside the workspace so packages resolve. Default: cwd. */
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export interface IsolatedRunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The child was killed at `timeoutMs`. */
  timedOut: boolean;
  durationMs: number;
}

/**
 * Runs a catastrophic case (a hostile pattern, a huge argument) in a child process with a time
 * and memory limit, so a regression fails the test instead of hanging the suite or taking the
 * test runner down out of memory. Test support only.
 */
export function runIsolated(options: IsolatedRunOptions): Promise<IsolatedRunResult> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const require = createRequire(import.meta.url);
  // Resolved from here, so the child finds tsx whichever package's test starts it.
  const tsx = require.resolve('tsx');
  const args = [
    `--max-old-space-size=${options.maxOldSpaceMb ?? 256}`,
    '--conditions=@sbx/source',
    '--import',
    tsx,
    '--input-type=module',
    '-e',
    options.script,
  ];
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: options.cwd ?? process.cwd(),
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut, durationMs: Date.now() - started });
    });
  });
}
