import type { Clock } from './clock.js';
import { AbortedError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';

export type DeadlineOutcome<T> =
  { readonly timedOut: false; readonly value: T } | { readonly timedOut: true };

export interface DeadlineOptions {
  clock: Clock;
  /** Milliseconds; `undefined` waits as long as `work` takes. */
  ms: number | undefined;
  signal?: AbortSignal | undefined;
  /** Aborted when the caller stops waiting (deadline or `signal`), so the work can be cancelled. */
  controller?: AbortController;
  logger?: Logger;
  /** Names the work in the log line written if it fails after the caller left. */
  label?: string;
}

/**
 * Waits for `work`, but never longer than `ms` on `clock`, and never past `signal`. A runtime's own
 * timeout is not enough on its own: a wedged VM can stop answering altogether, and whoever waits
 * for it may be holding a per-thread lock. The timer is cleared as soon as `work` settles, so no
 * timer outlives the call; work abandoned at the deadline keeps running, and a failure it reports
 * later is logged instead of surfacing as an unhandled rejection.
 */
export function withDeadline<T>(
  work: Promise<T>,
  options: DeadlineOptions,
): Promise<DeadlineOutcome<T>> {
  const { clock, ms, signal, controller } = options;
  if (signal?.aborted) {
    controller?.abort(signal.reason);
    work.catch(() => {});
    return Promise.reject(new AbortedError(undefined, { cause: signal.reason }));
  }
  return new Promise<DeadlineOutcome<T>>((resolve, reject) => {
    let done = false;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const abandon = (): void => {
      work.catch((error: unknown) => {
        options.logger?.debug('Abandoned sandbox call failed after its caller stopped waiting', {
          call: options.label,
          error,
        });
      });
    };
    const onAbort = (): void => {
      if (!finish()) return;
      controller?.abort(signal?.reason);
      abandon();
      reject(new AbortedError(undefined, { cause: signal?.reason }));
    };
    const timer =
      ms === undefined
        ? undefined
        : clock.setTimeout(() => {
            if (!finish()) return;
            controller?.abort(new Error(`deadline of ${ms} ms exceeded`));
            abandon();
            resolve({ timedOut: true });
          }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        if (finish()) resolve({ timedOut: false, value });
      },
      (error: unknown) => {
        if (finish()) reject(error);
      },
    );
  });
}
