/**
 * Reading what a client sends, bounded before it is buffered. `readUntil` collects a request head
 * or a TLS ClientHello off a fresh socket; `StreamReader` pulls chunks one at a time, so what is
 * not yet read stays in the kernel and the client is slowed down (back-pressure) instead of the
 * proxy buffering for it.
 */
import type { Duplex, Readable } from 'node:stream';
import { Refusal } from './egress-refusal.js';

/** Reads until `done` says the buffered bytes are complete, within `max` bytes and `timeoutMs`. */
export function readUntil(
  socket: Duplex,
  initial: Buffer,
  max: number,
  timeoutMs: number,
  done: (data: Buffer) => number | 'more' | Refusal,
): Promise<{ data: Buffer; end: number } | Refusal> {
  return new Promise((resolve) => {
    let data = initial;
    const finish = (result: { data: Buffer; end: number } | Refusal) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      socket.pause();
      resolve(result);
    };
    const check = () => {
      const verdict = done(data);
      if (verdict instanceof Refusal) return finish(verdict);
      if (verdict !== 'more') return finish({ data, end: verdict });
      if (data.length >= max) return finish(new Refusal(431, 'header-too-large'));
    };
    const onData = (chunk: Buffer) => {
      // Bounded before copying: never hold more than `max` plus one chunk.
      data = data.length === 0 ? chunk : Buffer.concat([data, chunk]);
      check();
    };
    const onEnd = () => finish(new Refusal(400, 'bad-request'));
    const timer = setTimeout(() => finish(new Refusal(408, 'header-timeout')), timeoutMs);
    timer.unref();
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    if (data.length > 0) check();
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
