/** Longest text held back waiting for a line end before it is rewritten and passed on anyway. */
export const MAX_HELD_LINE_CHARS = 64 * 1024;

/**
 * Applies a whole-text rewrite (host-path masking, secret redaction) to streamed output. A rewrite
 * needs to see a path or a secret whole, and a chunk boundary may fall inside one, so text is
 * passed on a line at a time: what follows the last line end waits for the next chunk, for the
 * end of the stream, or until it grows past 64 KiB (a line that long may be cut inside a path).
 */
export class StreamRewriter {
  #held = '';

  constructor(
    private readonly rewrite: (text: string) => string,
    private readonly listener: (text: string) => void,
  ) {}

  write = (text: string): void => {
    const joined = this.#held + text;
    const cut = joined.lastIndexOf('\n');
    if (cut === -1 && joined.length <= MAX_HELD_LINE_CHARS) {
      this.#held = joined;
      return;
    }
    const upTo = cut === -1 ? joined.length : cut + 1;
    this.#held = joined.slice(upTo);
    this.listener(this.rewrite(joined.slice(0, upTo)));
  };

  end(): void {
    if (this.#held === '') return;
    const rest = this.#held;
    this.#held = '';
    this.listener(this.rewrite(rest));
  }
}
