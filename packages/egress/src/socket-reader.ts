/**
 * Reading what a client sends, bounded before it is buffered. `readUntil` collects a request head
 * or a TLS ClientHello off a fresh socket; `StreamReader` pulls chunks one at a time, so what is
 * not yet read stays in the kernel and the client is slowed down (back-pressure) instead of the
 * proxy buffering for it.
 */
import type { Duplex, Readable } from 'node:stream';
import { Refusal } from './egress-refusal.js';

/**
 * Reads until `done` says the buffered bytes are complete, within `max` bytes and `timeoutMs`.
 * `done` gets the bytes so far and how many of them it saw at its previous call, so a search
 * looks only at what is new. The bytes gather in one buffer that doubles when full: a client
 * sending a byte per packet costs linear copying, not a copy of everything per byte.
 */
export function readUntil(
  socket: Duplex,
  initial: Buffer,
  max: number,
  timeoutMs: number,
  done: (data: Buffer, seen: number) => number | 'more' | Refusal,
): Promise<{ data: Buffer; end: number } | Refusal> {
  return new Promise((resolve) => {
    let store = initial;
    let length = initial.length;
    let seen = 0;
    const finish = (result: { data: Buffer; end: number } | Refusal) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      socket.pause();
      resolve(result);
    };
    const check = () => {
      const data = store.subarray(0, length);
      const verdict = done(data, seen);
      seen = length;
      if (verdict instanceof Refusal) return finish(verdict);
      if (verdict !== 'more') return finish({ data, end: verdict });
      if (length >= max) return finish(new Refusal(431, 'header-too-large'));
    };
    const onData = (chunk: Buffer) => {
      // Bounded: checked after each chunk, so never more than `max` plus one chunk is held.
      if (length + chunk.length > store.length) {
        const grown = Buffer.allocUnsafe(Math.max(2 * store.length, length + chunk.length, 1024));
        store.copy(grown, 0, 0, length);
        store = grown;
      }
      chunk.copy(store, length);
      length += chunk.length;
      check();
    };
    const onEnd = () => finish(new Refusal(400, 'bad-request'));
    const timer = setTimeout(() => finish(new Refusal(408, 'header-timeout')), timeoutMs);
    timer.unref();
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    if (length > 0) check();
    socket.resume();
  });
}

/** Chunks of a readable, pulled one at a time; `null` at its end. */
export class StreamReader {
  readonly #stream: Readable;
  readonly #pending: Buffer[] = [];

  constructor(stream: Readable) {
    this.#stream = stream;
  }

  /** Puts back bytes read too far (the start of the next message). */
  unshift(chunk: Buffer): void {
    if (chunk.length > 0) this.#pending.unshift(chunk);
  }

  async read(): Promise<Buffer | null> {
    const pending = this.#pending.shift();
    if (pending) return pending;
    const stream = this.#stream;
    for (;;) {
      const chunk = stream.read() as Buffer | null;
      if (chunk !== null) return chunk;
      if (stream.readableEnded || stream.destroyed) return null;
      await new Promise<void>((resolve) => {
        const done = () => {
          stream.off('readable', done);
          stream.off('end', done);
          stream.off('close', done);
          resolve();
        };
        stream.on('readable', done);
        stream.on('end', done);
        stream.on('close', done);
      });
    }
  }

  /**
   * The bytes up to the first blank line (without it), `'end'` when the stream ends before a
   * byte of a new message, or the refusal (over `max`, or ended mid-head).
   */
  async readHead(max: number): Promise<Buffer | 'end' | Refusal> {
    // Chunks are kept apart and joined once: a head sent a byte at a time costs linear work.
    const chunks: Buffer[] = [];
    let total = 0;
    let tail = Buffer.alloc(0);
    for (;;) {
      const chunk = await this.read();
      if (chunk === null) return total === 0 ? 'end' : new Refusal(400, 'bad-request');
      // The terminator may straddle chunks: searched in the previous 3 bytes and this chunk.
      const window = tail.length === 0 ? chunk : Buffer.concat([tail, chunk]);
      const at = window.indexOf('\r\n\r\n', 0, 'latin1');
      if (at !== -1) {
        const end = total - tail.length + at;
        if (end + 4 > max) return new Refusal(431, 'header-too-large');
        const data = Buffer.concat([...chunks, chunk]);
        this.unshift(data.subarray(end + 4));
        return data.subarray(0, end);
      }
      chunks.push(chunk);
      total += chunk.length;
      if (total >= max) return new Refusal(431, 'header-too-large');
      tail = Buffer.from(window.subarray(Math.max(0, window.length - 3)));
    }
  }
}
