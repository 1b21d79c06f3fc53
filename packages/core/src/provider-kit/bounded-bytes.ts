export interface BoundedBytesOptions {
  /** Most bytes kept; one more is `tooLarge()`. */
  readonly limit: number;
  /** The error for a stream past the limit (thrown before the chunk that crosses it is kept). */
  tooLarge(): Error;
  /** Told when closing the stream after an early end failed (the transfer's error still wins). */
  onCloseError?(error: unknown): void;
}

/**
 * Reads a byte stream into one array, counting what actually arrives: the limit holds even when a
 * size reported up front would be stale or wrong, an oversized stream never sits in memory whole,
 * and a stream ended early (past the limit, or failed) is closed, not left dangling.
 */
export async function collectBoundedBytes(
  stream: AsyncIterable<Uint8Array>,
  options: BoundedBytesOptions,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const iterator = stream[Symbol.asyncIterator]();
  let finished = false;
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done) {
        finished = true;
        break;
      }
      total += next.value.byteLength;
      if (total > options.limit) throw options.tooLarge();
      chunks.push(next.value);
    }
  } finally {
    if (!finished) {
      try {
        await iterator.return?.();
      } catch (error) {
        options.onCloseError?.(error);
      }
    }
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
