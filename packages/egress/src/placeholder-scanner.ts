/**
 * Finds credential placeholders in what a sandbox sends. Every placeholder starts with
 * `PLACEHOLDER_PREFIX`, so the scan looks for the prefix alone: one `indexOf` per chunk, and a
 * placeholder of any sandbox (or a truncated one) is caught the same way.
 */

/** The start of every placeholder; the rest is 43 base64url characters. */
export const PLACEHOLDER_PREFIX = 'sbx-placeholder-';

const PREFIX = Buffer.from(PLACEHOLDER_PREFIX, 'latin1');

/** Whether `text` holds a placeholder, as sent or percent-decoded (`sbx%2Dplaceholder%2D...`). */
export function containsPlaceholder(text: string): boolean {
  if (text.includes(PLACEHOLDER_PREFIX)) return true;
  if (!text.includes('%')) return false;
  // Decoded byte-wise; a malformed escape stays as it was (what a lenient upstream would do).
  const decoded = text.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) =>
    String.fromCharCode(parseInt(hex, 16)),
  );
  return decoded.includes(PLACEHOLDER_PREFIX);
}

/**
 * A scan over a stream of chunks: a placeholder split across chunks (TCP writes, chunked framing)
 * is found because the last `prefix - 1` bytes of one chunk are searched again with the next.
 * Work is linear in the bytes scanned; the carry-over is the only memory kept.
 */
export class PlaceholderScanner {
  #carry: Buffer = Buffer.alloc(0);

  /** True once the bytes seen so far (this chunk included) hold the prefix. */
  push(chunk: Buffer): boolean {
    const window = this.#carry.length === 0 ? chunk : Buffer.concat([this.#carry, chunk]);
    if (window.indexOf(PREFIX) !== -1) return true;
    const keep = Math.min(PREFIX.length - 1, window.length);
    this.#carry = Buffer.from(window.subarray(window.length - keep));
    return false;
  }
}
