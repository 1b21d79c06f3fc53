import { spawn } from 'node:child_process';
import { shellArgs } from './shell.js';
import { constants as osConstants } from 'node:os';
import type { Readable } from 'node:stream';
import { AbortedError, SandboxRuntimeError } from '@sbx/core';
import { sharedOutputPacer, type OutputPacer, type PacedStream } from '@sbx/core/internal';
import { BoundedCapture, COMMAND_CAPTURE_LIMIT_BYTES } from './bounded-capture.js';
import type { SessionObserver } from './session-observer.js';
import { extraStdio, startPlan } from './confinement/spawn-plan.js';
import type { SpawnPlan } from './confinement/spawn-plan.js';

export interface PosixRunOptions {
  /** Absolute path of the shell; the command runs as `<shell> -c <command>`. */
  shell: string;
  command: string;
  env: Record<string, string>;
  cwd?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Per-stream capture limit (default 10 MiB). */
  maxCaptureBytes?: number;
  /** Upper bound for collecting the remaining output once the process group is gone. */
  closeWaitMs?: number;
  /** Written to the shell's standard input, which is then closed; without it stdin is null. */
  stdin?: string | Uint8Array;
  /** Raw output as it arrives, before any capture limit. */
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /** Back-pressure on the output (default: the pacer every host command shares). */
  pacer?: OutputPacer;
  /** Told about the shell's session, so what the command leaves running can be reaped later. */
  session?: SessionObserver;
  /** Spawn this instead of `<shell> -c <command>` (a confined command's entry). */
  plan?: SpawnPlan;
}

export interface PosixRunResult {
  stdout: string;
  stderr: string;
  /** Exit status of the shell; `128 + n` when it died from signal `n`. */
  exitCode: number;
  timedOut: boolean;
  /** Pid of the shell, which is also the id of the command's process group. */
  pid: number;
  /** Some output went past the capture limit and was dropped. */
  truncated?: boolean;
  /** The signal that ended the shell, if one did. */
  signal?: string;
}

/** After the shell exits, how long to keep reading what is already in the pipes. */
const SETTLE_LIMIT_MS = 250;
const DEFAULT_CLOSE_WAIT_MS = 10_000;

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    // EPERM means a member exists that we may not signal; only ESRCH means nobody is left.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function killGroup(pgid: number, fallback: () => void): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') fallback();
  }
}

function closed(stream: Readable): Promise<void> {
  if (stream.closed || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => stream.once('close', () => resolve()));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    t.unref();
  });
}

/**
 * Runs one shell command on a POSIX host.
 *
 * - The shell leads its own process group (`detached`), so a timeout or an abort can kill every
 *   process it started (`SIGKILL` to `-pgid`), grandchildren included.
 * - stdin is the null device (or the given input, then EOF): a command that reads input sees EOF
 *   instead of hanging the turn.
 * - Completion is the shell's `exit`, not EOF on its pipes: `server &` leaves a background process
 *   holding the pipes open, and waiting for EOF would block the turn for the server's lifetime.
 *   When the group is still alive after the exit, only what is already buffered is read (a few
 *   event-loop turns); after that the pipes stay drained into nothing, so the background process
 *   never blocks on a full pipe and nothing grows (no temp files, no buffers). When the group is
 *   gone, the pipes close promptly and all output is collected.
 * - Each stream keeps at most `maxCaptureBytes` (head), with a note about what was dropped.
 */
export async function runPosixCommand(options: PosixRunOptions): Promise<PosixRunResult> {
  const { signal } = options;
  if (signal?.aborted) throw new AbortedError(undefined, { cause: signal.reason });
  const limit = options.maxCaptureBytes ?? COMMAND_CAPTURE_LIMIT_BYTES;
  const stdoutCapture = new BoundedCapture(limit);
  const stderrCapture = new BoundedCapture(limit);

  options.session?.beforeSpawn();
  const { plan } = options;
  const child = spawn(
    plan?.file ?? options.shell,
    plan ? [...plan.args] : shellArgs(options.shell, options.command),
    {
      detached: true,
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', ...extraStdio(plan)],
      env: options.env,
      cwd: options.cwd,
      windowsHide: true,
      ...(plan?.uid !== undefined ? { uid: plan.uid } : {}),
      ...(plan?.gid !== undefined ? { gid: plan.gid } : {}),
    },
  );
  if (child.pid !== undefined) options.session?.started(child.pid);
  startPlan(child, plan, () => {
    if (child.pid !== undefined) killGroup(child.pid, () => child.kill('SIGKILL'));
  });
  const stdout = child.stdout as Readable;
  const stderr = child.stderr as Readable;
  const { onStdout, onStderr } = options;
  // Paced: a command printing faster than the loop should spend on it blocks on a full pipe.
  const pacer = options.pacer ?? sharedOutputPacer;
  const paced = [
    pacer.pace(stdout, (chunk) => {
      stdoutCapture.append(chunk);
      onStdout?.(chunk);
    }),
    pacer.pace(stderr, (chunk) => {
      stderrCapture.append(chunk);
      onStderr?.(chunk);
    }),
  ];
  if (options.stdin !== undefined && child.stdin) {
    // A command that exits without reading its input closes the pipe under us: EPIPE is its
    // choice, not a failure of the call.
    child.stdin.on('error', () => {});
    child.stdin.end(options.stdin);
  }

  let timedOut = false;
  let aborted = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve, reject) => {
      child.once('error', (err) => {
        reject(
          new SandboxRuntimeError(`Failed to start shell ${options.shell}: ${err.message}`, {
            cause: err,
          }),
        );
      });
      child.once('exit', (code, sig) => resolve({ code, signal: sig }));
    },
  );

  const pid = child.pid;
  const kill = () => {
    if (pid !== undefined) killGroup(pid, () => child.kill('SIGKILL'));
    else child.kill('SIGKILL');
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs);
  const onAbort = () => {
    aborted = true;
    kill();
  };
  signal?.addEventListener('abort', onAbort, { once: true });

  let status: { code: number | null; signal: NodeJS.Signals | null };
  try {
    status = await exited;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    if (pid !== undefined) options.session?.ended(pid);
  }

  const groupGone = timedOut || aborted || pid === undefined || !groupAlive(pid);
  const bothClosed = Promise.all([closed(stdout), closed(stderr)]);
  if (groupGone) {
    // Every writer is dead (or was just killed): EOF follows at once. The bound only matters for a
    // process that left the group with `setsid` while keeping the pipes.
    await Promise.race([bothClosed, delay(options.closeWaitMs ?? DEFAULT_CLOSE_WAIT_MS)]);
  }
  await settle([stdoutCapture, stderrCapture], paced);

  stdoutCapture.seal();
  stderrCapture.seal();
  // Background processes may keep the pipes open for hours; they must not keep Node alive.
  for (const s of [stdout, stderr]) {
    (s as Readable & { unref?: () => void }).unref?.();
  }
  child.unref();

  if (aborted) throw new AbortedError(undefined, { cause: signal?.reason });
  return {
    stdout: await stdoutCapture.text(),
    stderr: await stderrCapture.text(),
    exitCode: exitCodeOf(status),
    timedOut,
    pid: pid ?? -1,
    truncated: stdoutCapture.truncated || stderrCapture.truncated,
    ...(status.signal ? { signal: status.signal } : {}),
  };
}

/**
 * Reads until a full event-loop turn brings no new bytes and no stream waits for the pacer
 * (bounded), i.e. the pipes are empty.
 */
async function settle(
  captures: readonly BoundedCapture[],
  paced: readonly PacedStream[],
): Promise<void> {
  const total = () => captures.reduce((n, c) => n + c.totalBytes, 0);
  const started = Date.now();
  let before = -1;
  while (Date.now() - started < SETTLE_LIMIT_MS) {
    const now = total();
    if (now === before && !paced.some((p) => p.waiting)) return;
    before = now;
    // Two turns: the first may run in the same loop iteration that delivered `exit`.
    await nextTurn();
    await nextTurn();
  }
}

function exitCodeOf(status: { code: number | null; signal: NodeJS.Signals | null }): number {
  if (status.code !== null) return status.code;
  if (status.signal) {
    const n = (osConstants.signals as Record<string, number | undefined>)[status.signal];
    if (n !== undefined) return 128 + n;
  }
  return 0;
}
