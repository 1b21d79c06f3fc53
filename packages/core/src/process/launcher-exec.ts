import { systemClock, type Clock, type ClockTimer } from '../async/clock.js';
import type { ExecOptions, ExecResult } from '../contract/sandbox-exec.js';
import { AbortedError } from '../errors/errors.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import { guardedListener } from './guarded-listener.js';
import type { LaunchedExit, LaunchedProcess, ProcessLauncher } from './process-launcher.js';
import { Utf8Listener } from './utf8-listener.js';
import { sharedOutputPacer, type OutputPacer } from './output-pacer.js';
import { PacedListener } from './paced-listener.js';

/** Per-stream bytes `execViaLauncher` keeps by default (10 MiB, as the host sandbox). */
export const DEFAULT_EXEC_CAPTURE_BYTES = 10 * 1024 * 1024;
/**
 * How long a command killed at its limit (or on abort) may take to report its end before the
 * call stops waiting for it: a backend that no longer answers must not hold the caller forever.
 */
export const KILLED_COMMAND_GRACE_MS = 5_000;

/** Keeps the head of one stream up to a limit and counts the rest. */
class HeadCapture {
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  #total = 0;
  constructor(private readonly limit: number) {}
  append(chunk: Uint8Array | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk);
    this.#total += bytes.length;
    const room = this.limit - this.#kept;
    if (room <= 0) return;
    const part = bytes.length <= room ? bytes : bytes.subarray(0, room);
    this.#chunks.push(part);
    this.#kept += part.length;
  }
  get truncated(): boolean {
    return this.#total > this.#kept;
  }
  text(): string {
    const out = Buffer.concat(this.#chunks, this.#kept).toString('utf8');
    if (!this.truncated) return out;
    return `${out}\n... [output truncated after ${this.#kept} of ${this.#total} bytes; remaining output discarded] ...`;
  }
}

export interface LauncherExecOptions {
  /** The limit that applies (the caller's, or the sandbox's default); `undefined`: none. */
  readonly timeoutMs: number | undefined;
  readonly captureBytes?: number;
  readonly logger?: Logger;
  readonly sandboxId?: string;
  readonly clock?: Clock;
  /** Paces listeners' output when the launcher does not (default: the shared pacer). */
  readonly pacer?: OutputPacer;
}

/**
 * `exec` for a provider that has only a `ProcessLauncher`: the command runs as a process whose
 * output is streamed to the listeners and kept (head, bounded per stream), killed at its limit
 * (`timedOut`) or when the caller aborts (`AbortedError`). Input, when given, is written and the
 * input closed; the caller checks `capabilities.stdin` first.
 */
export async function execViaLauncher(
  launcher: ProcessLauncher,
  command: string,
  options: ExecOptions,
  limits: LauncherExecOptions,
): Promise<ExecResult> {
  if (options.signal?.aborted) throw new AbortedError(undefined, { cause: options.signal.reason });
  const logger = limits.logger ?? silentLogger;
  const sandboxId = limits.sandboxId ?? '';
  const captureBytes = limits.captureBytes ?? DEFAULT_EXEC_CAPTURE_BYTES;
  const stdout = new HeadCapture(captureBytes);
  const stderr = new HeadCapture(captureBytes);
  const report = (error: unknown) =>
    logger.warn('a command output listener threw; it gets no more output', {
      sandboxId,
      error: error instanceof Error ? error.message : String(error),
    });
  // A backend's callbacks cannot be paused: what reaches a listener is paced here instead.
  const paced = (target: Utf8Listener, listener: unknown) =>
    listener === undefined || launcher.pacesOutput === true
      ? target
      : new PacedListener(target, { pacer: limits.pacer ?? sharedOutputPacer });
  const out = paced(
    new Utf8Listener(guardedListener(options.onStdout, logger, sandboxId), report),
    options.onStdout,
  );
  const err = paced(
    new Utf8Listener(guardedListener(options.onStderr, logger, sandboxId), report),
    options.onStderr,
  );
  const started = performance.now();
  const clock = limits.clock ?? systemClock;
  const warn = (message: string, error?: unknown) =>
    logger.warn(message, {
      sandboxId,
      ...(error !== undefined
        ? { error: error instanceof Error ? error.message : String(error) }
        : { graceMs: KILLED_COMMAND_GRACE_MS }),
    });
  const kill = (process: LaunchedProcess) =>
    process.kill('SIGKILL').catch((error: unknown) => warn('could not kill a command', error));

  // Stopping (the limit, or the caller's abort) asks for a kill and then waits a bounded time: a
  // backend that never starts the command, or never reports the end of a killed one, must not
  // hold the caller. An abort before the command started rejects at once.
  let launched: LaunchedProcess | undefined;
  let timedOut = false;
  let stopping = false;
  let graceTimer: ClockTimer | undefined;
  let release!: (why: 'gave-up' | 'aborted') => void;
  const stopped = new Promise<'gave-up' | 'aborted'>((resolve) => (release = resolve));
  const stop = (why: 'limit' | 'abort'): void => {
    if (why === 'limit') timedOut = true;
    if (!stopping) {
      stopping = true;
      if (launched) void kill(launched);
      graceTimer = clock.setTimeout(() => release('gave-up'), KILLED_COMMAND_GRACE_MS);
    }
    if (why === 'abort' && !launched) release('aborted');
  };
  const timer =
    limits.timeoutMs === undefined
      ? undefined
      : clock.setTimeout(() => stop('limit'), limits.timeoutMs);
  const onAbort = () => stop('abort');
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const launching = launcher.launch(
    command,
    {
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(limits.timeoutMs !== undefined ? { timeoutMs: limits.timeoutMs } : {}),
    },
    {
      stdout: (chunk) => {
        stdout.append(chunk);
        out.write(chunk);
      },
      stderr: (chunk) => {
        stderr.append(chunk);
        err.write(chunk);
      },
    },
  );
  let exit: LaunchedExit = { exitCode: null };
  try {
    const first = await Promise.race([launching, stopped]);
    if (typeof first === 'string') {
      // Stopped before the backend even started it: it is killed whenever it does start.
      launching.then(kill, (error: unknown) => warn('a command failed to start late', error));
      if (first === 'gave-up') warn('a command did not start before its limit and grace ran out');
    } else {
      launched = first;
      if (stopping) void kill(first);
      const input = async (): Promise<void> => {
        // Without input the command reads end-of-file at once, as from the null device.
        if (options.stdin !== undefined && first.write) await first.write(options.stdin);
        await first.closeStdin?.();
      };
      const fed = await Promise.race([
        input().then(
          () => 'fed' as const,
          (error: unknown) => {
            // Nobody is left to stop a command whose input could not be given.
            void kill(first);
            throw error;
          },
        ),
        stopped,
      ]);
      const ended = fed === 'fed' ? await Promise.race([first.exited, stopped]) : fed;
      if (ended === 'gave-up') {
        warn('a killed command did not report its end; no longer waiting for it');
      } else if (ended !== 'aborted') {
        exit = ended;
      }
    }
  } finally {
    if (timer) clock.clearTimeout(timer);
    if (graceTimer) clock.clearTimeout(graceTimer);
    options.signal?.removeEventListener('abort', onAbort);
    out.end();
    err.end();
  }
  // Every listener call happens before exec returns, as with an unpaced launcher.
  if (out instanceof PacedListener) await out.drained();
  if (err instanceof PacedListener) await err.drained();
  if (options.signal?.aborted) throw new AbortedError(undefined, { cause: options.signal.reason });
  return {
    exitCode: timedOut ? null : exit.exitCode,
    stdout: stdout.text(),
    stderr: stderr.text(),
    durationMs: performance.now() - started,
    truncated: stdout.truncated || stderr.truncated,
    timedOut,
    ...(limits.timeoutMs !== undefined ? { timeoutMs: limits.timeoutMs } : {}),
    ...(exit.signal !== undefined && !timedOut ? { signal: exit.signal } : {}),
  };
}
