import type { OutputListener } from '../contract/sandbox-exec.js';

/**
 * Feeds raw output chunks to a text listener without splitting a UTF-8 character across two
 * calls (a chunk boundary may fall inside one). A listener that throws is the caller's bug: it is
 * reported once through `onListenerError` and not called again, so it can neither kill the
 * command nor lose the output the sandbox keeps.
 */
export class Utf8Listener {
  readonly #decoder = new TextDecoder('utf-8', { fatal: false });
  #listener: OutputListener | undefined;
  readonly #onListenerError: (error: unknown) => void;

  constructor(listener: OutputListener | undefined, onListenerError: (error: unknown) => void) {
    this.#listener = listener;
    this.#onListenerError = onListenerError;
  }

  write(chunk: Uint8Array | string): void {
    if (this.#listener === undefined) return;
    const text = typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true });
    if (text !== '') this.#deliver(text);
  }

  /** Flushes a trailing partial character (as U+FFFD). */
  end(): void {
    if (this.#listener === undefined) return;
    const rest = this.#decoder.decode();
    if (rest !== '') this.#deliver(rest);
  }

  #deliver(text: string): void {
    try {
      this.#listener?.(text);
    } catch (error) {
      this.#listener = undefined;
      this.#onListenerError(error);
    }
  }
}
