import type { Clock } from '../async/clock.js';
import type { ProcessInput } from '../contract/sandbox-exec.js';
import type { ProcessWriteOptions } from '../contract/sandbox-processes.js';
import { InvalidArgumentError } from '../errors/errors.js';
import { ProcessInputBlockedError, ProcessStateError } from '../errors/process-errors.js';
import { CapabilityNotSupportedError } from '../errors/capability-errors.js';
import type { Logger } from '../logging/logger.js';
import { assertProcessTimeout } from './process-limits.js';
import type { ProcessRecord } from './process-record.js';

/** Largest single `write()` to a process's standard input. */
export const MAX_PROCESS_WRITE_BYTES = 1024 * 1024;
/** How long a `write()` waits for the process to take its input, unless the caller says. */
export const DEFAULT_PROCESS_WRITE_TIMEOUT_MS = 10_000;

/** What a write needs from the table it belongs to. */
export interface ProcessInputContext {
  /** Whether the launcher's processes take standard input at all. */
  readonly stdin: boolean;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly sandboxId: string | undefined;
}

/**
 * One bounded write to a running process's standard input: refused before any byte moves when it
 * is too large, the process has ended or its input was closed; otherwise waited for at most
 * `timeoutMs`, after which the caller learns how many bytes the process took.
 */
export async function writeProcessInput(
  record: ProcessRecord,
  input: ProcessInput,
  options: ProcessWriteOptions = {},
  context: ProcessInputContext,
): Promise<void> {
  const write = record.launched.write;
  if (!context.stdin || write === undefined) {
    throw new CapabilityNotSupportedError('stdin', 'This sandbox cannot write to a process input');
  }
  if (!(typeof input === 'string' || input instanceof Uint8Array)) {
    throw new InvalidArgumentError('process input must be a string or bytes');
  }
  const size = typeof input === 'string' ? Buffer.byteLength(input, 'utf8') : input.length;
  if (size > MAX_PROCESS_WRITE_BYTES) {
    throw new InvalidArgumentError(
      `process input is ${size} bytes; one write takes at most ${MAX_PROCESS_WRITE_BYTES}`,
    );
  }
  if (record.exit !== undefined) {
    throw new ProcessStateError(`Process ${record.id} has exited; its input is closed`);
  }
  if (record.stdinClosed) {
    throw new ProcessStateError(`The input of process ${record.id} was closed`);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROCESS_WRITE_TIMEOUT_MS;
  assertProcessTimeout(timeoutMs, 'write timeoutMs');
  // A process that does not read its input never takes what does not fit in the pipe: the
  // wait is bounded, the backend told to stop sending, and the caller learns what was taken.
  const stop = new AbortController();
  let accepted = 0;
  const timer = context.clock.setTimeout(() => stop.abort(), timeoutMs);
  const blocked = new Promise<'blocked'>((resolve) =>
    stop.signal.addEventListener('abort', () => resolve('blocked'), { once: true }),
  );
  const writing = write.call(record.launched, input, {
    signal: stop.signal,
    onAccepted: (bytes) => (accepted = Math.max(accepted, Math.min(bytes, size))),
  });
  try {
    const outcome = await Promise.race([writing.then(() => 'written' as const), blocked]);
    if (outcome === 'blocked') {
      writing.catch((error: unknown) =>
        context.logger.warn('a blocked write to a process input failed later', {
          sandboxId: context.sandboxId,
          processId: record.id,
          error: error instanceof Error ? error.message : String(error),
        }),
      );
      throw new ProcessInputBlockedError(record.id, {
        acceptedBytes: accepted,
        totalBytes: size,
        timeoutMs,
      });
    }
  } finally {
    context.clock.clearTimeout(timer);
  }
}
