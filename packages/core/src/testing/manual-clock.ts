import type { Clock, ClockTimeoutOptions, ClockTimer } from '../async/clock.js';

interface ManualTimer extends ClockTimer {
  readonly seq: number;
  readonly due: number;
  readonly callback: () => void | Promise<void>;
  readonly ref: boolean;
}

/**
 * A `Clock` that only moves when the test says so. `advance(ms)` fires every timer that falls due,
 * in due-time order (ties in scheduling order), with `now()` set to each timer's due time while it
 * runs; timers scheduled by a callback fire in the same `advance` if they fall due within it. A
 * callback's returned promise is awaited before the next timer fires, so after `await advance()`
 * the work the timers started has finished.
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers = new Set<ManualTimer>();

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(
    callback: () => void | Promise<void>,
    ms: number,
    options: ClockTimeoutOptions = {},
  ): ClockTimer {
    const timer: ManualTimer = {
      seq: (this.#seq += 1),
      due: this.#now + Math.max(0, ms),
      callback,
      ref: options.ref ?? false,
    };
    this.#timers.add(timer);
    return timer;
  }

  clearTimeout(timer: ClockTimer): void {
    this.#timers.delete(timer as ManualTimer);
  }

  /** Timers scheduled and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Pending timers that asked to keep the process alive (`ref: true`). */
  get refTimers(): number {
    return [...this.#timers].filter((t) => t.ref).length;
  }

  /** Due time of the next pending timer, if any. */
  nextDueAt(): number | undefined {
    return this.#next()?.due;
  }

  /** Moves time forward by `ms`, firing due timers in order. */
  async advance(ms: number): Promise<void> {
    if (ms < 0) throw new RangeError(`ManualClock cannot go back in time (advance(${ms}))`);
    await this.advanceTo(this.#now + ms);
  }

  /** Moves time forward to `targetMs`, firing due timers in order. */
  async advanceTo(targetMs: number): Promise<void> {
    if (targetMs < this.#now) {
      throw new RangeError(`ManualClock cannot go back in time (${targetMs} < ${this.#now})`);
    }
    for (;;) {
      const next = this.#next();
      if (next === undefined || next.due > targetMs) break;
      this.#timers.delete(next);
      this.#now = next.due;
      await next.callback();
      // Let fire-and-forget continuations of the callback run before the next timer.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.#now = targetMs;
  }

  /** Fires every timer that is already due without moving time. */
  async runDue(): Promise<void> {
    await this.advanceTo(this.#now);
  }

  #next(): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.#timers) {
      if (best === undefined || t.due < best.due || (t.due === best.due && t.seq < best.seq))
        best = t;
    }
    return best;
  }
}
