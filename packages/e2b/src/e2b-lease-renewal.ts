import { RenewOutcome } from '@sbx/core';
import { Sightings, lapsedLeaseVerdict } from '@sbx/core/provider-kit';
import type { OwnershipClient } from '@sbx/core/provider-kit';
import { errorMessage } from './e2b-errors.js';
import type { E2BProviderContext } from './e2b-provider-context.js';

/** Where one lease stands after its renewal. */
export type RenewedLease = 'own' | 'waiting' | 'lost' | 'unknown';

/**
 * One `renew` round trip, fail-open: a store that cannot answer is reported (an `ownership-error`
 * event and a log line) and answers `unknown`, never "lost".
 */
export async function renewOnce(
  ctx: E2BProviderContext,
  ownership: OwnershipClient,
  id: string,
): Promise<RenewOutcome | 'unknown'> {
  try {
    return await ownership.store.renew(id);
  } catch (error) {
    storeFailed(ctx, 'renew', id, error);
    return 'unknown';
  }
}

function storeFailed(ctx: E2BProviderContext, operation: string, id: string, error: unknown): void {
  ctx.events.emit({ type: 'ownership-error', operation, sandboxId: id, error });
  ctx.logger.warn('Could not renew the lease of an e2b sandbox; keeping it', {
    sandboxId: id,
    operation,
    error: errorMessage(error),
  });
}

/**
 * Renews every lease this instance holds. A store that cannot answer means "unknown": keep and
 * retry. A lease a peer holds makes us forget the VM without touching it, unless an acquire
 * re-took it meanwhile: its intent mark, or an epoch that moved on since this renewal read it (the
 * `LOST` answer is stale then). Ids under a held teardown are skipped: `renew` would see our own
 * `del:` marker.
 *
 * An absent lease (a flush, a store restart without data) is re-established by the precedence of
 * core's `lapsedLeaseVerdict`: at once for a VM in use here, only one renewal interval later for a
 * VM only parked here. A flush erases every holder's lease, a stale one's included (a gateway
 * paused past the TTL that still parks a VM a peer has taken for a turn since), and a re-claim is
 * won by whoever asks first: the holder running a turn must win it.
 */
export class E2BLeaseRenewal {
  readonly #ctx: E2BProviderContext;
  /** When the lease of a VM only parked here was first found absent. */
  readonly #parkedLapses = new Sightings();

  constructor(ctx: E2BProviderContext) {
    this.#ctx = ctx;
  }

  async renewLeases(): Promise<void> {
    const ownership = (await this.#ctx.stores()).ownership;
    const held = ownership.heldIds();
    this.#parkedLapses.keepOnly(held);
    for (const id of held) {
      if (this.#ctx.isClosed()) return;
      if (ownership.isTearingDown(id)) continue;
      const epoch = ownership.epochOf(id);
      if ((await this.#renew(ownership, id)) !== 'lost') continue;
      // Both marks are read after the round trip in the same synchronous step as the forget: a
      // take that lands between a check and the forget (a reclaim's publish moves the epoch, then
      // drops its intent mark) would otherwise be forgotten, its VM's lease never renewed again.
      if (ownership.epochOf(id) !== epoch || ownership.hasIntent(id)) continue;
      await this.#forgetLost(ownership, id);
    }
  }

  async #renew(ownership: OwnershipClient, id: string): Promise<RenewedLease> {
    const outcome = await renewOnce(this.#ctx, ownership, id);
    if (outcome === 'unknown') return 'unknown';
    if (outcome !== RenewOutcome.LAPSED) {
      this.#parkedLapses.forget(id);
      return outcome === RenewOutcome.RENEWED ? 'own' : 'lost';
    }
    const { verdict, firstLapsedAt } = lapsedLeaseVerdict({
      crossProcess: ownership.crossProcess,
      // Anything but parked warm is in use here: a turn, or an acquire or adoption in flight.
      inUse: !this.#ctx.book.pool.has(id),
      firstLapsedAt: this.#parkedLapses.get(id),
      now: this.#ctx.clock.now(),
      waitMs: this.#ctx.ownershipConfig.renewalIntervalSeconds * 1000,
    });
    this.#parkedLapses.set(id, firstLapsedAt);
    if (verdict.kind === 'wait') return 'waiting';
    try {
      if (!(await ownership.store.claim(id))) return 'lost';
    } catch (error) {
      storeFailed(this.#ctx, 'claim', id, error);
      return 'unknown';
    }
    this.#ctx.logger.info('Re-established the lapsed lease of an e2b sandbox', { sandboxId: id });
    return 'own';
  }

  /** Forgets a VM a peer took over; everything up to the client's close in one synchronous step. */
  async #forgetLost(ownership: OwnershipClient, id: string): Promise<void> {
    ownership.forget(id);
    const entry = this.#ctx.book.untrackActive(id);
    this.#ctx.book.pool.forget(id);
    this.#ctx.logger.info('A peer took over an e2b sandbox; forgot it locally', { sandboxId: id });
    this.#ctx.notify();
    if (entry !== undefined) await entry.sandbox.close();
  }
}
