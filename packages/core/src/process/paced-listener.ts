import { consoleLogger } from '../logging/logger.js';
import { sharedOutputPacer, type OutputCredit } from './output-pacer.js';

/** Bytes a paced listener queues for its target before the oldest are dropped. */
export const DEFAULT_PACED_QUEUE_BYTES = 1024 * 1024;

/** What a paced listener hands its chunks to: decoding, rewriting and the caller's listener. */
export interface PacedTarget {
  write(chunk: Uint8Array | string): void;
  end(): void;
}

export interface PacedListenerOptions {
  /** The shared credit (an `OutputPacer`). */
  readonly pacer: OutputCredit;
  /** Bytes queued before the oldest are dropped. Default 1 MiB. */
  readonly maxQueuedBytes?: number;
  /** The text handed on in place of `bytes` dropped bytes. */
  readonly droppedNotice?: (bytes: number) => string;
  /**
   * Told once of a target that threw (a bug in the target); it gets nothing more and the listener
   * counts as drained. Default: logged with `console.error`.
   */
  readonly onTargetError?: (error: unknown) => void;
}

const reportTargetError = (error: unknown): void =>
  consoleLogger().error('a paced output target threw; it gets no more output', {
    error: error instanceof Error ? error.message : String(error),
  });

const defaultNotice = (bytes: number): string =>
  `\n[${bytes} bytes of output dropped: the gateway paces streamed output]\n`;

/**
 * Back-pressure for output a backend pushes through callbacks (E2B, AIO, BoxLite, Tenki,
 * OpenSandbox): unlike a local pipe, such a source cannot be paused. Chunks reach the target —
 * where they are decoded, masked, redacted and handed to the caller's listener — only within the
 * shared pacer's credit, so a tenant's flood costs a bounded amount of work per turn of the loop
 * however fast the network delivers it. What waits is kept raw and bounded: past
 * `maxQueuedBytes` the oldest bytes are dropped undecoded and the target gets a notice instead, so
 * memory stays bounded and the latest output (the part an agent needs) is what survives.
 */
export class PacedListener {
  readonly #target: PacedTarget;
  readonly #pacer: OutputCredit;
  readonly #max: number;
  readonly #notice: (bytes: number) => string;
  readonly #onTargetError: (error: unknown) => void;
  readonly #queue: (Uint8Array | string)[] = [];
  #queuedBytes = 0;
  #dropped = 0;
  /** Dropped bytes the target has not been told of yet. */
  #pendingNotice = 0;
  #waiting = false;
  #ended = false;
  /** The target threw or was discarded: it gets nothing more, its end included. */
  #cutOff = false;
  #drained: Promise<void> | undefined;
  #resolveDrained: (() => void) | undefined;

  constructor(target: PacedTarget, options: PacedListenerOptions) {
    this.#target = target;
    this.#pacer = options.pacer;
    this.#max = options.maxQueuedBytes ?? DEFAULT_PACED_QUEUE_BYTES;
    this.#notice = options.droppedNotice ?? defaultNotice;
    this.#onTargetError = options.onTargetError ?? reportTargetError;
  }

  /** Bytes dropped so far because the target fell behind. */
  get droppedBytes(): number {
    return this.#dropped;
  }

  write(chunk: Uint8Array | string): void {
    if (this.#ended) return;
    const size = sizeOf(chunk);
    if (size === 0) return;
    // In order: a chunk may skip the queue only when nothing waits in it.
    if (!this.#waiting && this.#pacer.take(size)) {
      this.#deliver(chunk);
      return;
    }
    this.#queue.push(chunk);
    this.#queuedBytes += size;
    this.#trim();
    this.#wait();
  }

  /** Ends the target once everything queued was handed on. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (!this.#waiting) this.#finish();
  }

  /**
   * Stops for good (nobody listens any more): what waits is dropped, nothing more takes the shared
   * credit or reaches the target, and the listener counts as drained.
   */
  discard(): void {
    this.#queue.length = 0;
    this.#queuedBytes = 0;
    this.#pendingNotice = 0;
    this.#ended = true;
    this.#cutOff = true;
    // A serve still in the pacer's line finds nothing to hand on and leaves it.
    this.#waiting = false;
    this.#resolveDrained?.();
  }

  /** Settles once `end()` was called and the target has had everything (and its end). */
  drained(): Promise<void> {
    if (this.#ended && !this.#waiting) return Promise.resolve();
    this.#drained ??= new Promise((resolve) => (this.#resolveDrained = resolve));
    return this.#drained;
  }

  #wait(): void {
    if (this.#waiting) return;
    this.#waiting = true;
    this.#pacer.whenCredit(() => this.#serve());
  }

  #serve(): boolean {
    if (this.#pendingNotice > 0) {
      const notice = this.#notice(this.#pendingNotice);
      this.#pendingNotice = 0;
      this.#deliver(notice);
    }
    while (this.#queue.length > 0) {
      const chunk = this.#queue[0] as Uint8Array | string;
      const size = sizeOf(chunk);
      if (!this.#pacer.take(size)) return false;
      this.#queue.shift();
      this.#queuedBytes -= size;
      this.#deliver(chunk);
    }
    this.#waiting = false;
    if (this.#ended) this.#finish();
    return true;
  }

  /**
   * Hands a chunk to the target. A target that throws is cut off here, where it threw: this runs in
   * the shared pacer's turn, which must go on for every other listener, and the caller awaiting
   * `drained()` must not wait for output nobody can take any more.
   */
  #deliver(chunk: Uint8Array | string): void {
    try {
      this.#target.write(chunk);
    } catch (error) {
      this.#queue.length = 0;
      this.#queuedBytes = 0;
      this.#pendingNotice = 0;
      this.#ended = true;
      this.#cutOff = true;
      this.#onTargetError(error);
    }
  }

  /** Drops the oldest queued bytes past the bound; the notice goes out before what is left. */
  #trim(): void {
    while (this.#queuedBytes > this.#max) {
      const head = this.#queue[0] as Uint8Array | string;
      const over = this.#queuedBytes - this.#max;
      const size = sizeOf(head);
      if (size <= over) {
        this.#queue.shift();
        this.#queuedBytes -= size;
        this.#dropped += size;
        this.#pendingNotice += size;
        continue;
      }
      const bytes = typeof head === 'string' ? Buffer.from(head, 'utf8') : head;
      this.#queue[0] = bytes.subarray(over);
      this.#queuedBytes -= over;
      this.#dropped += over;
      this.#pendingNotice += over;
    }
  }

  #finish(): void {
    try {
      if (!this.#cutOff) this.#target.end();
    } catch (error) {
      this.#cutOff = true;
      this.#onTargetError(error);
    }
    this.#resolveDrained?.();
  }
}

function sizeOf(chunk: Uint8Array | string): number {
  return typeof chunk === 'string' ? Buffer.byteLength(chunk, 'utf8') : chunk.byteLength;
}

/** A text listener behind a `PacedListener`, for a provider that runs its own `exec`. */
export interface PacedTextListener {
  /** What the backend's callbacks call; `undefined` when there is no listener to pace. */
  readonly listener: ((text: string) => void) | undefined;
  /** Hands on what is still queued; settles once the listener has had all of it. */
  finish(): Promise<void>;
}

/**
 * Paces a listener fed by a backend's text callbacks (E2B's and OpenSandbox's own `exec`) like
 * `execViaLauncher` paces its listeners: the caller awaits `finish()` before it returns, so every
 * listener call still happens within the call.
 */
export function pacedTextListener(
  listener: ((text: string) => void) | undefined,
  pacer: OutputCredit = sharedOutputPacer,
): PacedTextListener {
  if (listener === undefined) return { listener: undefined, finish: () => Promise.resolve() };
  const paced = new PacedListener(
    {
      write: (chunk) => listener(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString()),
      end: () => undefined,
    },
    { pacer },
  );
  return {
    listener: (text) => paced.write(text),
    finish: () => {
      paced.end();
      return paced.drained();
    },
  };
}
