import type { Readable } from 'node:stream';
import { consoleLogger } from '../logging/logger.js';

/** Bytes of output all paced streams together hand on in one turn of the event loop. */
export const DEFAULT_OUTPUT_BYTES_PER_TURN = 64 * 1024;
/** Bytes of output all paced streams together hand on per second, sustained. */
export const DEFAULT_OUTPUT_BYTES_PER_SECOND = 64 * 1024 * 1024;

export interface OutputPacerOptions {
  /** Bytes handed on per turn of the loop, across every stream this pacer paces. */
  readonly bytesPerTurn?: number;
  /** Bytes handed on per second, across every stream this pacer paces. */
  readonly bytesPerSecond?: number;
  /** Milliseconds of a monotonic clock. Default: `performance.now()`. */
  readonly now?: () => number;
  /**
   * Runs `callback` in a later turn of the loop, at least `delayMs` from now. Default:
   * `setImmediate` for 0, else `setTimeout`.
   */
  readonly later?: (callback: () => void, delayMs: number) => void;
  /**
   * Told of a waiting source whose serve threw (a bug in that source): it is dropped from the line
   * and the others are served. Default: logged with `console.error`.
   */
  readonly onServeError?: (error: unknown) => void;
}

/**
 * The part of a pacer a push source uses (`PacedListener`): take credit for bytes, or wait in line
 * for it.
 */
export interface OutputCredit {
  take(bytes: number): boolean;
  whenCredit(serve: () => boolean): void;
}

/** A stream under a pacer. */
export interface PacedStream {
  /** Paused by the pacer, waiting for a later turn. */
  readonly waiting: boolean;
}

/**
 * Back-pressure for child output read by the gateway's one event loop. Every paced stream draws
 * on one credit of bytes: at most `bytesPerTurn` in a turn of the loop, refilled at
 * `bytesPerSecond`. A stream that finds no credit is paused, its chunk put back in front of its
 * buffer (so its 'end' still follows all of its data), and it flows again in a later turn, after
 * timers and other I/O had theirs, waiting streams served oldest first. A paused stream's child
 * blocks on a full pipe: a flood costs neither the loop (one turn does at most the turn's credit
 * plus one chunk, however many streams flood) nor the CPU its producers would burn if the gateway
 * drained them as fast as they write, so one tenant's output cannot starve another tenant's calls.
 */
export class OutputPacer implements OutputCredit {
  readonly #bytesPerTurn: number;
  readonly #bytesPerMs: number;
  readonly #now: () => number;
  readonly #later: (callback: () => void, delayMs: number) => void;
  readonly #onServeError: (error: unknown) => void;
  #credit: number;
  #refilledAt: number;
  #refillQueued = false;
  /** Streams paused for want of credit, in the order they ran out. */
  readonly #waiting: (() => boolean)[] = [];

  constructor(options: OutputPacerOptions = {}) {
    const bytesPerTurn = options.bytesPerTurn ?? DEFAULT_OUTPUT_BYTES_PER_TURN;
    const bytesPerSecond = options.bytesPerSecond ?? DEFAULT_OUTPUT_BYTES_PER_SECOND;
    for (const [name, value] of [
      ['bytesPerTurn', bytesPerTurn],
      ['bytesPerSecond', bytesPerSecond],
    ] as const) {
      if (!(Number.isInteger(value) && value > 0)) {
        throw new RangeError(`${name} must be a positive integer, got ${value}`);
      }
    }
    this.#bytesPerTurn = bytesPerTurn;
    this.#bytesPerMs = bytesPerSecond / 1000;
    this.#now = options.now ?? (() => performance.now());
    this.#later =
      options.later ??
      ((callback, delayMs) => {
        if (delayMs <= 0) setImmediate(callback);
        else setTimeout(callback, delayMs);
      });
    this.#onServeError =
      options.onServeError ??
      ((error) =>
        consoleLogger().error('a paced output source threw when served; it is dropped', {
          error: error instanceof Error ? error.message : String(error),
        }));
    this.#credit = bytesPerTurn;
    this.#refilledAt = this.#now();
  }

  /** Streams waiting for credit now. */
  get waitingStreams(): number {
    return this.#waiting.length;
  }

  /**
   * Delivers `stream`'s chunks to `deliver` within the shared credit. The stream is read in
   * flowing mode from here on; `deliver` must not throw (it runs in the stream's 'data' event).
   */
  pace(stream: Readable, deliver: (chunk: Buffer) => void): PacedStream {
    let waiting = false;
    // Once there is credit again the stream flows; its 'data' handler charges what it reads.
    const serve = (): boolean => {
      if (this.#credit <= 0) return false;
      waiting = false;
      stream.resume();
      return true;
    };
    stream.on('data', (chunk: Buffer) => {
      if (this.#take(chunk.length)) {
        deliver(chunk);
        return;
      }
      // A paused stream emits no 'data', so it is queued once until it is served.
      stream.pause();
      stream.unshift(chunk);
      waiting = true;
      this.#waiting.push(serve);
      this.#queueRefill();
    });
    return {
      get waiting() {
        return waiting;
      },
    };
  }

  /**
   * For a source that pushes and cannot be paused (a remote backend's callbacks; see
   * `PacedListener`): charges `bytes` to the shared credit, or returns false when there is none.
   */
  take(bytes: number): boolean {
    return this.#take(bytes);
  }

  /**
   * Queues `serve` behind the streams already waiting; it runs in a later turn once there is
   * credit, and stays first in line until it returns true (false: it still has bytes to hand on).
   */
  whenCredit(serve: () => boolean): void {
    this.#waiting.push(serve);
    this.#queueRefill();
  }

  #take(bytes: number): boolean {
    if (this.#credit <= 0) return false;
    // A chunk larger than what is left still goes whole; the debt delays the next refill.
    this.#credit -= bytes;
    this.#queueRefill();
    return true;
  }

  #queueRefill(): void {
    if (this.#refillQueued) return;
    this.#refillQueued = true;
    // With credit left, the next turn; in debt, when the rate has paid it back.
    const delayMs = this.#credit > 0 ? 0 : Math.ceil((1 - this.#credit) / this.#bytesPerMs);
    this.#later(() => this.#refill(), delayMs);
  }

  /** A new turn: credit accrued since the last refill (at most a turn's), waiting streams served. */
  #refill(): void {
    this.#refillQueued = false;
    const now = this.#now();
    const accrued = (now - this.#refilledAt) * this.#bytesPerMs;
    this.#refilledAt = now;
    this.#credit = Math.min(this.#bytesPerTurn, this.#credit + accrued);
    while (this.#waiting.length > 0) {
      const serve = this.#waiting[0] as () => boolean;
      // One pacer serves every tenant: a source that throws must not end this turn for the others
      // (nor, escaping the loop's callback, the gateway), nor stay first in line for ever.
      let served: boolean;
      try {
        served = serve();
      } catch (error) {
        served = true;
        this.#onServeError(error);
      }
      if (!served) break;
      this.#waiting.shift();
    }
    if (this.#waiting.length > 0) this.#queueRefill();
  }
}

/** The pacer every host command's output shares unless given one of its own. */
export const sharedOutputPacer = new OutputPacer();
