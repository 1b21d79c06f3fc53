import { SandboxRuntimeError, errorMessage } from '@sbx/core';
import type {
  IdleTeardownReservation,
  Sandbox,
  TeardownReservation,
  WarmEntry,
  WarmPoolDestroyReason,
} from '@sbx/core';
import type { AioWarmValue } from './aio-identity.js';
import { renewLease } from './aio-lease-renewal.js';
import type { AioProviderContext } from './aio-provider-context.js';
import type { SandboxInfo } from './sandbox-info.js';

/** What an untrack removed; undefined when a stale `expected` info made it a no-op. */
export type Removed = { client: Sandbox | undefined; info: SandboxInfo | undefined } | undefined;

export type UntrackedStopOutcome = 'stopped' | 'tracked' | 'owned' | 'failed';

export const UNTRACKED_STOP_REASONS: Record<Exclude<UntrackedStopOutcome, 'stopped'>, string> = {
  tracked: 'taken up by this instance meanwhile',
  owned: 'claim refused: another instance owns it, or the ownership store cannot answer',
  failed: 'the stop failed (see the log); the container may still run',
};

/**
 * Every way a container stops or is forgotten: destroy, the unhealthy drop, the warm and idle
 * reapers, the unready and untracked stops, and the forget of one a peer took over. Each decides
 * outside any lock, so each relies on the teardown reservation (taken in the same synchronous
 * block as its "still reapable?" check and refused by every promote path), the claim for destroy
 * before anything is untracked, and the `del:` marker held by a heartbeat for the whole stop.
 */
export class AioTeardown {
  readonly #ctx: AioProviderContext;

  constructor(ctx: AioProviderContext) {
    this.#ctx = ctx;
  }

  /** Stops a container under the `del:` marker the caller has just claimed. */
  #heldStop(id: string, info: SandboxInfo): Promise<void> {
    return this.#ctx.ownership().heldTeardown(id, () => this.#ctx.backend.destroy(info));
  }

  /**
   * (f) Stops a new container that never became ready, unless another instance owns it: its
   * name is visible to peers for the whole readiness wait, and one of them may have discovered
   * and handed it out meanwhile.
   */
  async destroyUnready(id: string, info: SandboxInfo): Promise<void> {
    const { logger } = this.#ctx;
    const outcome = await this.destroyUntracked(id, info);
    if (outcome === 'tracked') {
      logger.warn(`Not stopping unready sandbox ${id}: it is tracked or being torn down`);
    } else if (outcome === 'owned') {
      logger.warn(`Not stopping unready sandbox ${id}: another instance owns it`);
    } else if (outcome === 'failed') {
      logger.error(`Could not stop unready sandbox ${id}`);
    }
  }

  /**
   * Stops a container no map tracks: reserved here (so no acquire or reconciliation here takes
   * it meanwhile), claimed for destroy (a peer's lease, or a store that cannot answer, keeps it),
   * stopped under a held teardown lease.
   */
  async destroyUntracked(id: string, info: SandboxInfo): Promise<UntrackedStopOutcome> {
    const { book } = this.#ctx;
    const reservation = book.pool.reserve(id, () => !book.isTracked(id));
    if (reservation === undefined) return 'tracked';
    try {
      if (!(await this.#ctx.ownership().claim(id, { forDestroy: true }))) return 'owned';
      try {
        await this.#heldStop(id, info);
      } catch (err) {
        this.#ctx.logger.error(`Could not stop sandbox ${id}`, { error: errorMessage(err) });
        return 'failed';
      }
      return 'stopped';
    } finally {
      reservation.release();
    }
  }

  /**
   * Stops a tracked sandbox under a held teardown lease. Refused (nothing stopped, the entry stays
   * tracked) when another instance holds its lease or the store cannot answer. A failed stop
   * propagates after the marker is released.
   */
  async destroyTracked(id: string, stillReapable: () => boolean): Promise<boolean> {
    const { book, logger } = this.#ctx;
    let reservation = book.pool.reserve(id, stillReapable);
    if (reservation === undefined) {
      logger.debug(`Not destroying sandbox ${id}: not reapable or already being torn down`);
      return false;
    }
    try {
      if (this.#ctx.supersededHere.has(id)) {
        logger.warn(
          `Not destroying sandbox ${id}: another instance took it over; forgetting it instead`,
        );
        reservation.release();
        this.forgetLost(id);
        return false;
      }
      // Claim before untracking: a refused claim must not leave a running container that no map
      // knows about.
      if (!(await this.#ctx.ownership().claim(id, { forDestroy: true }))) {
        logger.warn(
          `Not destroying sandbox ${id}: another instance owns it, or the ownership store cannot answer`,
        );
        return false;
      }
      let removed: Removed;
      [removed, reservation] = this.#removeTrackedReserved(id, reservation);
      if (removed?.client) await this.#ctx.closeClient(removed.client, id, 'destroy');
      const info = removed?.info;
      if (info !== undefined) {
        await this.#heldStop(id, info);
      } else {
        // Nothing to stop: clear the marker just written.
        await this.#ctx.ownership().release(id);
      }
      return true;
    } finally {
      reservation.release();
    }
  }

  /**
   * Drops a sandbox whose container is gone or stopped. `expected` guards against a stale
   * verdict: when neither the active nor the warm entry is that very info object any more, the
   * entry was recreated after the check and is left alone.
   */
  async dropUnhealthy(id: string, reason: string, expected?: SandboxInfo): Promise<void> {
    const { book, logger } = this.#ctx;
    if (book.pool.isReserved(id)) return;
    const removed = this.removeTracked(id, expected);
    if (removed === undefined) return;
    // Same synchronous block as the check above, so nothing can have reserved it meanwhile; the
    // reservation keeps discovery and reconciliation off the container until its stop ended.
    const reservation = book.pool.reserve(id);
    try {
      if (removed.client) await this.#ctx.closeClient(removed.client, id, 'drop');
      const info = removed.info;
      if (info !== undefined) {
        if (await this.#ctx.ownership().claim(id, { forDestroy: true })) {
          try {
            await this.#heldStop(id, info);
          } catch (err) {
            logger.warn(`Could not stop unhealthy sandbox ${id}`, { error: errorMessage(err) });
          }
        } else {
          logger.info(
            `Not stopping unhealthy sandbox ${id}: another instance owns it; reconciliation will see it again`,
          );
        }
      }
      logger.warn(`Dropped unhealthy sandbox ${id}: ${reason}`);
    } finally {
      reservation?.release();
    }
  }

  /**
   * Untracks `id` everywhere (active entry, thread mappings, activity, epoch, warm entry); with
   * `expected`, only if the active or warm entry still holds that very info. Returns what was
   * removed, or undefined for a stale `expected`. Synchronous; refuses nothing itself, but the
   * warm pool keeps a reserved entry (see `#removeTrackedReserved`).
   */
  removeTracked(id: string, expected?: SandboxInfo): Removed {
    const { book } = this.#ctx;
    const entry = book.active(id);
    const warm = book.pool.get(id);
    if (expected !== undefined && entry?.info !== expected && warm?.value.info !== expected) {
      return undefined;
    }
    if (entry !== undefined) book.untrackActive(id);
    this.#ctx.ownershipIfReady()?.forget(id);
    if (warm !== undefined) book.pool.forget(id);
    return { client: entry?.client, info: entry?.info ?? warm?.value.info };
  }

  /**
   * `removeTracked` for an id this caller has reserved. The warm pool refuses to drop a reserved
   * entry (a teardown keeps its entry until the stop outcome is known); here the teardown is
   * ours, so the reservation is released, the entry removed and the id reserved again in one
   * synchronous block: no other task can observe the id unreserved.
   */
  #removeTrackedReserved(
    id: string,
    reservation: TeardownReservation,
  ): [Removed, TeardownReservation] {
    reservation.release();
    const removed = this.removeTracked(id);
    const again = this.#ctx.book.pool.reserve(id);
    if (again === undefined) {
      throw new SandboxRuntimeError(`internal: could not re-reserve sandbox ${id} for teardown`);
    }
    return [removed, again];
  }

  /**
   * Forgets a sandbox whose lease a peer now holds, without touching the container (stopping it
   * would be the very cross-instance kill the store exists to prevent). Refused while a teardown
   * of it runs here (a failed stop must keep its entry), while an acquire is publishing it (the
   * take may already be durable), or when an acquire re-published it since `expectedEpoch` was
   * read (the same client object is handed out again, so identity cannot tell).
   */
  forgetLost(id: string, expectedEpoch?: number): boolean {
    const { book } = this.#ctx;
    const ownership = this.#ctx.ownershipIfReady();
    if (book.pool.isReserved(id) || ownership?.hasIntent(id)) return false;
    if (expectedEpoch !== undefined && (ownership?.epochOf(id) ?? 0) !== expectedEpoch) {
      return false;
    }
    const entry = book.untrackActive(id);
    if (book.pool.has(id)) book.pool.forget(id);
    ownership?.forget(id);
    this.#ctx.supersededHere.delete(id);
    if (entry !== undefined) void this.#ctx.closeClient(entry.client, id, 'forget');
    return true;
  }

  /**
   * Warm teardown: renew, then claim (a lease not ours right now, or a refused claim, keeps the
   * entry), stop under a held lease.
   */
  async destroyWarm(
    entry: WarmEntry<AioWarmValue>,
    reason: WarmPoolDestroyReason,
  ): Promise<boolean> {
    const { logger } = this.#ctx;
    if (this.#ctx.supersededHere.delete(entry.id)) {
      logger.warn(
        `Forgetting warm sandbox ${entry.id} (${reason}): another instance took it over; the container keeps running`,
      );
      // The pool removes the entry inside its reservation; nothing is stopped.
      return true;
    }
    // Renewed first: a flush erases every lease, and the claim below would then be granted while a
    // peer runs a turn in the sandbox. Only a lease that is this instance's own right now counts.
    const lease = await renewLease(this.#ctx, entry.id);
    if (lease !== 'own') {
      logger.info(`Not stopping warm sandbox ${entry.id} (${reason}): its lease is ${lease}`);
      return false;
    }
    if (!(await this.#ctx.ownership().claim(entry.id, { forDestroy: true }))) {
      logger.info(`Not stopping warm sandbox ${entry.id} (${reason}): another instance owns it`);
      return false;
    }
    await this.#heldStop(entry.id, entry.value.info);
    // The pool removes the entry now, inside its reservation.
    return true;
  }

  /** Stops active sandboxes idle past `idle_timeout` (warm expiry follows in the same pass). */
  async cleanupIdleActive(): Promise<void> {
    const { book, clock, logger } = this.#ctx;
    const timeoutMs = this.#ctx.settings.idleTimeoutSeconds * 1000;
    if (!(timeoutMs > 0) || this.#ctx.isClosed()) return;
    for (const id of book.idleIds(timeoutMs)) {
      let hold: IdleTeardownReservation | undefined;
      // Evaluated when the reservation is taken, not before: activity bumped since the snapshot,
      // or a lease holder, keeps the sandbox.
      const stillIdle = () => {
        const at = book.lastActivity(id);
        if (at === undefined || clock.now() - at < timeoutMs) return false;
        hold = this.#ctx.tryReserveIdleTeardown(id);
        return hold !== undefined;
      };
      try {
        await this.destroyTracked(id, stillIdle);
      } catch (err) {
        logger.error(`Failed to destroy idle sandbox ${id}`, { error: errorMessage(err) });
      } finally {
        hold?.release();
      }
    }
  }

  /**
   * Shutdown: stops every sandbox whose lease this instance can claim, active ones first, then
   * the warm pool. A refused claim (a peer's lease) leaves its entry for `forgetAll`.
   */
  async stopAll(): Promise<void> {
    const { book, logger } = this.#ctx;
    await Promise.all(
      book.activeIds().map(async (id) => {
        try {
          await this.destroyTracked(id, () => true);
        } catch (err) {
          logger.error(`Failed to destroy sandbox ${id} during shutdown: ${errorMessage(err)}`);
        }
      }),
    );
    await book.pool.destroyAll();
  }

  /** Shutdown, last: forgets whatever is left (peer-owned ones) and closes their clients. */
  async forgetAll(): Promise<void> {
    const { book } = this.#ctx;
    for (const [id, entry] of book.activeEntries()) {
      book.untrackActive(id);
      await this.#ctx.closeClient(entry.client, id, 'shutdown');
    }
    for (const id of book.pool.ids()) book.pool.forget(id);
    book.clearActive();
  }

  /**
   * `reset()`: gives every tracked sandbox up without stopping it. The entries go first, in one
   * synchronous step; then the clients close and the leases are released (a sandbox a teardown
   * here is stopping keeps its `del:` marker until that stop ends).
   */
  async handOverAll(): Promise<void> {
    const { book } = this.#ctx;
    const active = book.activeEntries();
    const ids = book.trackedIds().filter((id) => !book.pool.isReserved(id));
    book.clearActive();
    for (const id of book.pool.ids()) book.pool.forget(id);
    this.#ctx.supersededHere.clear();
    for (const [id, entry] of active) await this.#ctx.closeClient(entry.client, id, 'reset');
    const ownership = this.#ctx.ownershipIfReady();
    if (ownership === undefined) return;
    for (const id of ids) {
      ownership.forget(id);
      await ownership.release(id);
    }
  }
}
