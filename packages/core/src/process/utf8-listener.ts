import { StringDecoder } from 'node:string_decoder';
import type { OutputListener } from '../contract/sandbox-exec.js';
import { StreamRewriter } from './stream-rewriter.js';

/**
 * Feeds raw output chunks to a text listener without splitting a UTF-8 character across two
 * calls (a chunk boundary may fall inside one); with a `rewrite` (host-path masking, secret
 * redaction), the text goes a line at a time through it first (`StreamRewriter`). A listener that
 * throws is the caller's bug: it is reported once through `onListenerError` and not called again,
 * so it can neither kill the command nor lose the output the sandbox keeps.
 */
export class Utf8Listener {
  // StringDecoder, not TextDecoder: streaming, it is several times faster on invalid UTF-8.
  readonly #decoder = new StringDecoder('utf8');
  #listener: OutputListener | undefined;
  readonly #lines: StreamRewriter | undefined;
  readonly #onListenerError: (error: unknown) => void;

  constructor(
    listener: OutputListener | undefined,
    onListenerError: (error: unknown) => void,
    rewrite?: (text: string) => string,
  ) {
    this.#listener = listener;
    this.#onListenerError = onListenerError;
    this.#lines =
      listener !== undefined && rewrite !== undefined
        ? new StreamRewriter(rewrite, (text) => this.#listener?.(text))
        : undefined;
  }

  write(chunk: Uint8Array | string): void {
    if (this.#listener === undefined) return;
    const text =
      typeof chunk === 'string'
        ? chunk
        : this.#decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if (text !== '') this.#deliver(text);
  }

  /** Flushes a trailing partial character (as U+FFFD) and a line still waiting for its end. */
  end(): void {
    if (this.#listener === undefined) return;
    const rest = this.#decoder.end();
    if (rest !== '') this.#deliver(rest);
    this.#guard(() => this.#lines?.end());
  }

  /**
   * Stops listening: nothing more is decoded, rewritten or delivered, and a line held for its end
   * is dropped (the output stays in the process's buffer for whoever reads it).
   */
  detach(): void {
    this.#listener = undefined;
  }

  #deliver(text: string): void {
    this.#guard(() => (this.#lines ? this.#lines.write(text) : this.#listener?.(text)));
  }

  #guard(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.#listener = undefined;
      this.#onListenerError(error);
    }
  }
}
