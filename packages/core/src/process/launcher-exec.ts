import { systemClock, type Clock, type ClockTimer } from '../async/clock.js';
import type { ExecOptions, ExecResult } from '../contract/sandbox-exec.js';
import { AbortedError } from '../errors/errors.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import { guardedListener } from './guarded-listener.js';
import type { LaunchedExit, ProcessLauncher } from './process-launcher.js';
import { Utf8Listener } from './utf8-listener.js';

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
  const out = new Utf8Listener(guardedListener(options.onStdout, logger, sandboxId), report);
  const err = new Utf8Listener(guardedListener(options.onStderr, logger, sandboxId), report);
  const started = performance.now();
  const clock = limits.clock ?? systemClock;
  const launched = await launcher.launch(
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
  let timedOut = false;
  let giveUp: (() => void) | undefined;
  const gaveUp = new Promise<'gave-up'>((resolve) => (giveUp = () => resolve('gave-up')));
  let graceTimer: ClockTimer | undefined;
  const kill = () => {
    graceTimer ??= clock.setTimeout(() => giveUp?.(), KILLED_COMMAND_GRACE_MS);
    return launched.kill('SIGKILL').catch((error: unknown) =>
      logger.warn('could not kill a command', {
        sandboxId,
        error: error instanceof Error ? error.message : String(error),
      }),
    );
  };
  const timer =
    limits.timeoutMs === undefined
      ? undefined
      : clock.setTimeout(() => {
          timedOut = true;
          void kill();
        }, limits.timeoutMs);
  const onAbort = () => void kill();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let exit: LaunchedExit;
  try {
    if (options.stdin !== undefined && launched.write) {
      await launched.write(options.stdin);
      await launched.closeStdin?.();
    }
    const ended = await Promise.race([launched.exited, gaveUp]);
    if (ended === 'gave-up') {
      logger.warn('a killed command did not report its end; no longer waiting for it', {
        sandboxId,
        graceMs: KILLED_COMMAND_GRACE_MS,
      });
      exit = { exitCode: null };
    } else {
      exit = ended;
    }
  } finally {
    if (timer) clock.clearTimeout(timer);
    if (graceTimer) clock.clearTimeout(graceTimer);
    options.signal?.removeEventListener('abort', onAbort);
    out.end();
    err.end();
  }
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
