import type { Writable } from 'node:stream';
import { ProcessStateError } from '@sbx/core';
import type { InputWriteOptions } from '@sbx/core/internal';

/** One slice of a write: what a pipe takes in one go, so progress is known a slice at a time. */
const SLICE_BYTES = 64 * 1024;

/**
 * Writes `input` to a child's standard input a slice at a time, each slice handed on only once
 * the previous one was taken, so a process that stops reading holds at most one slice in Node's
 * buffer and the caller learns how many bytes it took (`onAccepted`). At `signal` no further
 * slice is sent; the one on its way stays queued and reaches the process if it ever reads.
 */
export async function writeInput(
  stdin: Writable | null,
  input: string | Uint8Array,
  options: InputWriteOptions = {},
): Promise<void> {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : Buffer.from(input);
  let accepted = 0;
  const closed = (why: string, cause?: Error) =>
    new ProcessStateError(
      `${why} (${accepted} of ${bytes.length} bytes were accepted)`,
      cause ? { cause } : {},
    );
  if (!stdin || stdin.destroyed || stdin.writableEnded) throw closed('the process input is closed');
  while (accepted < bytes.length) {
    if (options.signal?.aborted) return;
    if (stdin.destroyed || stdin.writableEnded) throw closed('the process input is closed');
    const slice = bytes.subarray(accepted, accepted + SLICE_BYTES);
    await new Promise<void>((resolve, reject) => {
      stdin.write(slice, (error) =>
        error
          ? reject(closed(`the process stopped reading its input: ${error.message}`, error))
          : resolve(),
      );
    });
    accepted += slice.length;
    options.onAccepted?.(accepted);
  }
}
