import { RenewOutcome, errorMessage } from '@sbx/core';
import { lapsedLeaseVerdict } from '@sbx/core/provider-kit';
import type { AioProviderContext } from './aio-provider-context.js';
import type { AioTeardown } from './aio-teardown.js';

/**
 * Where a lease stands after one renewal: `own` (renewed, or re-established after a lapse),
 * `waiting` (absent, and this instance only parks the sandbox: it looks again next interval),
 * `lost` (another instance holds it) or `unknown` (the store did not answer).
 */
export type RenewedLease = 'own' | 'waiting' | 'lost' | 'unknown';

/**
 * Renews one lease, fail-open (a store that cannot answer is reported and answers `unknown`). An
 * absent lease is re-established by the precedence of core's `lapsedLeaseVerdict`: at once for a
 * sandbox handed out to a turn here, only one renewal interval later for one that is only parked,
 * so a stale warm holder never wins a sandbox back from the instance running a turn in it after a
 * flush erased both leases.
 */
export async function renewLease(ctx: AioProviderContext, id: string): Promise<RenewedLease> {
  const ownership = ctx.ownership();
  const failed = (operation: string, error: unknown): RenewedLease => {
    ctx.events.emit({ type: 'ownership-error', operation, sandboxId: id, error });
    ctx.logger.warn(`Could not renew the lease of sandbox ${id}; keeping it`, {
      error: errorMessage(error),
    });
    return 'unknown';
  };
  let outcome: RenewOutcome;
  try {
    outcome = await ownership.store.renew(id);
  } catch (error) {
    return failed('renew', error);
  }
  if (outcome !== RenewOutcome.LAPSED) {
    ctx.parkedLapses.forget(id);
    return outcome === RenewOutcome.RENEWED ? 'own' : 'lost';
  }
  const { verdict, firstLapsedAt } = lapsedLeaseVerdict({
    crossProcess: ownership.crossProcess,
    inUse: ctx.book.isActive(id),
    firstLapsedAt: ctx.parkedLapses.get(id),
    now: ctx.clock.now(),
    waitMs: ctx.renewalIntervalMs,
  });
  ctx.parkedLapses.set(id, firstLapsedAt);
  if (verdict.kind === 'wait') return 'waiting';
  try {
    if (!(await ownership.store.claim(id))) return 'lost';
  } catch (error) {
    return failed('claim', error);
  }
  ctx.logger.info(`Re-established the lapsed lease of sandbox ${id}`);
  return 'own';
}

/**
 * The renewal pass over every lease this instance holds (active and warm), in parallel. A lease a
 * peer holds now makes this instance forget the sandbox, unless a teardown or an acquire of it
 * runs here; then it is remembered as superseded, so the reaper forgets instead of stopping it.
 */
export class AioLeaseRenewal {
  readonly #ctx: AioProviderContext;
  readonly #teardown: AioTeardown;

  constructor(ctx: AioProviderContext, teardown: AioTeardown) {
    this.#ctx = ctx;
    this.#teardown = teardown;
  }

  async renewPass(): Promise<void> {
    const { book, logger } = this.#ctx;
    const ownership = this.#ctx.ownership();
    const tracked = book.trackedIds();
    this.#ctx.parkedLapses.keepOnly(tracked);
    await Promise.all(
      tracked.map(async (id) => {
        const epoch = ownership.epochOf(id);
        if ((await renewLease(this.#ctx, id)) !== 'lost') return;
        if (this.#teardown.forgetLost(id, epoch)) {
          logger.warn(
            `Sandbox ${id} is owned by another instance now; forgot it (the container keeps running)`,
          );
          return;
        }
        // Kept only because a teardown here holds it: remember that it is a peer's now. Our own
        // teardown's del: marker reads as LOST too; that one is not a takeover.
        if (!book.pool.isReserved(id) || !(await ownership.heldByPeer(id))) return;
        // The peek's answer is stale if an acquire re-published the sandbox since the epoch was
        // read: it is ours again, and marking it would make the reaper forget a running container.
        if (ownership.epochOf(id) === epoch) this.#ctx.supersededHere.add(id);
      }),
    );
  }
}
