import { systemClock } from '../async/clock.js';
import type { Clock, ClockTimer } from '../async/clock.js';
import { silentLogger } from '../logging/logger.js';
import type { Logger } from '../logging/logger.js';
import type { OwnershipStore } from './ownership-store.js';
import { errorMessage } from '../errors/error-inspection.js';

/**
 * How long the end of a teardown waits for its heartbeat. Longer than two store operations (the
 * Redis store bounds each at 5 s): a refresh in flight when the stop returns, then the final
 * release. On a genuine wedge the heartbeat keeps the release and the caller moves on.
 */
export const TEARDOWN_JOIN_TIMEOUT_MS = 12_000;

export interface HeldTeardownLeaseOptions {
  readonly store: OwnershipStore;
  readonly sandboxId: string;
  /** The ownership renewal interval: the marker is re-claimed this often. */
  readonly intervalMs: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Default `TEARDOWN_JOIN_TIMEOUT_MS`. */
  readonly joinTimeoutMs?: number;
  /** Called once the heartbeat has performed (or given up) the final release. */
  readonly onReleased?: () => void;
}

function errorText(err: unknown): string {
  return errorMessage(err);
}

/**
 * Runs `stop` while holding this instance's `del:` teardown marker for `sandboxId`, which the
 * caller has already written with `claim(id, { forDestroy: true })`.
 *
 * Why a heartbeat: the marker has the ordinary lease TTL and nothing else refreshes it (`renew`
 * extends only `own:`), so a stop that outlives the TTL would let it lapse, a peer's `take()`
 * would succeed against the still-running container, and the stop would then land on the turn
 * just handed to that peer. The heartbeat re-claims the marker every interval until `stop`
 * settles.
 *
 * Why the heartbeat releases, not the caller: a refresh still in flight when `stop` returns would
 * otherwise land after the caller's release and rewrite `del:` on a container that is already
 * gone, refusing the thread's next `take()` for a whole TTL. Releasing from the heartbeat after
 * its loop ended orders the release strictly after the last refresh. The wait for it is bounded;
 * on a wedge the release is left to the heartbeat, never done by the caller.
 *
 * A failed stop releases the marker too (the thread must not be locked out for a TTL), and its
 * error propagates after the release.
 */
export async function withHeldTeardownLease<T>(
  options: HeldTeardownLeaseOptions,
  stop: () => Promise<T>,
): Promise<T> {
  const { store, sandboxId } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  let stopping = false;
  let timer: ClockTimer | undefined;
  let wake: (() => void) | undefined;

  const pause = () =>
    new Promise<void>((resolve) => {
      wake = resolve;
      timer = clock.setTimeout(() => {
        timer = undefined;
        resolve();
      }, options.intervalMs);
    });

  const heartbeat = (async () => {
    try {
      while (!stopping) {
        await pause();
        if (stopping) break;
        try {
          if (!(await store.claim(sandboxId, { forDestroy: true }))) {
            logger.error(
              `Lost the teardown exclusion of sandbox ${sandboxId}: another instance holds its lease`,
              { sandboxId },
            );
            break;
          }
        } catch (err) {
          // Unknown, not lost: keep refreshing; the TTL still bounds a marker left behind.
          logger.warn(`Could not refresh the teardown lease of sandbox ${sandboxId}`, {
            sandboxId,
            error: errorText(err),
          });
        }
      }
    } finally {
      try {
        await store.release(sandboxId);
      } catch (err) {
        logger.warn(`Could not release the teardown lease of sandbox ${sandboxId}`, {
          sandboxId,
          error: errorText(err),
        });
      }
      options.onReleased?.();
    }
  })();

  try {
    return await stop();
  } finally {
    stopping = true;
    if (timer !== undefined) {
      clock.clearTimeout(timer);
      timer = undefined;
    }
    wake?.();
    let joinTimer: ClockTimer | undefined;
    const joined = await Promise.race([
      heartbeat.then(() => true),
      new Promise<boolean>((resolve) => {
        // Ref'd: the caller awaits this bound.
        joinTimer = clock.setTimeout(
          () => resolve(false),
          options.joinTimeoutMs ?? TEARDOWN_JOIN_TIMEOUT_MS,
          { ref: true },
        );
      }),
    ]);
    if (joinTimer !== undefined) clock.clearTimeout(joinTimer);
    if (!joined) {
      logger.warn(
        `The teardown lease heartbeat of sandbox ${sandboxId} is still running; it will release the marker when its store call returns`,
        { sandboxId },
      );
    }
  }
}
