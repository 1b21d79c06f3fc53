import { systemClock } from './clock.js';
import type { Clock } from './clock.js';
import { AbortedError } from '../errors/errors.js';

export interface SleepOptions {
  /** Default `systemClock`; tests pass a `ManualClock`. */
  readonly clock?: Clock | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Message of the `AbortedError` an abort rejects with. */
  readonly abortMessage?: string | undefined;
}

/**
 * Waits `ms` on `clock`, or rejects with `AbortedError` once `signal` fires (at once if it already
 * has, without arming a timer). The timer is ref'd: a caller awaits this wait, and in a one-shot process (a CLI command
 * waiting out a grace, a readiness poll) it may be the only thing keeping the process alive.
 */
export function sleep(ms: number, options: SleepOptions = {}): Promise<void> {
  const { signal, abortMessage } = options;
  const clock = options.clock ?? systemClock;
  if (signal?.aborted) {
    return Promise.reject(new AbortedError(abortMessage, { cause: signal.reason }));
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clock.clearTimeout(timer);
      reject(new AbortedError(abortMessage, { cause: signal?.reason }));
    };
    const timer = clock.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      ms,
      { ref: true },
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
