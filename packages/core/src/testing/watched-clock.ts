import type { ClockTimeoutOptions, ClockTimer } from '../async/clock.js';
import { ManualClock } from './manual-clock.js';

/** A manual clock that wakes the suite when something starts waiting on it. */
export class WatchedClock extends ManualClock {
  #wakers: (() => void)[] = [];

  override setTimeout(
    callback: () => void | Promise<void>,
    ms: number,
    options?: ClockTimeoutOptions,
  ): ClockTimer {
    const timer = super.setTimeout(callback, ms, options);
    for (const wake of this.#wakers.splice(0)) wake();
    return timer;
  }

  /** Resolves once `call` has settled or a timer is pending on the clock. */
  waitingOrSettled(call: Promise<unknown>): Promise<void> {
    if (this.pendingTimers > 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#wakers.push(resolve);
      call.then(
        () => resolve(),
        () => resolve(),
      );
    });
  }
}
