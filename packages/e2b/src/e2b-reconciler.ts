import { DEFAULT_SKILLS_ROOT } from '@sbx/core/internal';
import { Sightings, ageVerdict, leaseGraceVerdict } from '@sbx/core/provider-kit';
import type { LeaseGraceVerdict } from '@sbx/core/provider-kit';
import { runBootstrap } from './bootstrap.js';
import type { E2BRemoteSandbox, E2BSandboxInfo } from './e2b-client.js';
import { reservationMaxAgeMs } from './e2b-config.js';
import { errorMessage } from './e2b-errors.js';
import {
  E2B_PROVIDER_TAG_VALUE,
  E2B_TAGS,
  belongsToLedger,
  compareCandidates,
  createdAtMs,
  skillsRootOf,
} from './metadata.js';
import { listRemoteInventory } from './remote-inventory.js';
import type { RemoteInventory } from './remote-inventory.js';
import { groupByThread, threadKeyText } from './e2b-thread-key.js';
import type { GroupPlan, ReapKill, ReapVerdict, ThreadKey } from './e2b-thread-key.js';
import type { E2BCapacity } from './e2b-capacity.js';
import type { E2BTeardown } from './e2b-teardown.js';
import type { OwnershipClient } from '@sbx/core/provider-kit';
import type { E2BProviderContext, Stores } from './e2b-provider-context.js';

export interface ReconciliationStats {
  discovered: number;
  adopted: number;
  duplicates: number;
  deferred: number;
  killed: number;
  dead: number;
  budgetExhausted: boolean;
}

/**
 * One reconciliation pass: the capacity ledger brought in line with the listing, each thread's
 * canonical VM adopted warm when nobody holds it, duplicates and orphans killed after their grace
 * (the provider kit's age rule, from sightings kept across passes) under a claimed `del:` marker.
 * Adopting or killing an untracked VM also needs it seen unowned for a whole lease TTL (the kit's
 * lease grace), so a store flush costs live peers nothing.
 */
export class E2BReconciler {
  readonly #ctx: E2BProviderContext;
  readonly #teardown: E2BTeardown;
  readonly #capacity: E2BCapacity;
  /** When each untracked VM was first seen without a lease, for the lease grace. */
  readonly #unowned = new Sightings();
  /** When a store call of this instance last failed: the lease grace counts only time after it. */
  #storeFailedAt: number | undefined;

  constructor(ctx: E2BProviderContext, teardown: E2BTeardown, capacity: E2BCapacity) {
    this.#ctx = ctx;
    this.#teardown = teardown;
    this.#capacity = capacity;
    ctx.events.onEvent((event) => {
      if (event.type === 'ownership-error') this.#storeFailedAt = ctx.clock.now();
    });
  }

  async #own(): Promise<OwnershipClient> {
    return (await this.#ctx.stores()).ownership;
  }

  async reconcilePass(): Promise<ReconciliationStats> {
    const stats: ReconciliationStats = {
      discovered: 0,
      adopted: 0,
      duplicates: 0,
      deferred: 0,
      killed: 0,
      dead: 0,
      budgetExhausted: false,
    };
    if (this.#ctx.isClosed()) return stats;
    const stores = await this.#ctx.stores();
    const r = this.#ctx.settings.reconciliation;
    const deadline = this.#ctx.clock.now() + r.maxSeconds * 1000;
    let revision: number | undefined;
    if (stores.capacity !== undefined) {
      try {
        revision = await stores.capacity.revision();
      } catch (error) {
        this.#ctx.logger.warn('Reading the capacity ledger revision failed', {
          error: errorMessage(error),
        });
      }
    }
    const inventory = await this.listOurs(stores, deadline);
    stats.budgetExhausted = inventory.budgetExhausted;
    const entries = inventory.entries;
    stats.discovered = entries.length;
    if (stores.capacity !== undefined && revision !== undefined) {
      try {
        const applied = await stores.capacity.reconcile({
          expectedRevision: revision,
          entries: entries.map((e) => ({
            sandboxId: e.sandboxId,
            reservationToken: e.metadata[E2B_TAGS.capacityReservation] || undefined,
          })),
          complete: inventory.complete,
          maxAgeMs: reservationMaxAgeMs(this.#ctx.ownershipConfig, this.#ctx.settings),
        });
        if (!applied) this.#ctx.logger.debug('Capacity inventory was stale; not applied');
      } catch (error) {
        this.#ctx.logger.warn('Applying the capacity inventory failed', {
          error: errorMessage(error),
        });
      }
    }

    const { groups, orphans } = groupByThread(entries);
    for (const { key, infos } of groups) {
      if (this.#ctx.isClosed()) break;
      const plan = await this.planGroup(key, infos, deadline);
      stats.dead += plan.dead.length;
      stats.deferred += plan.unprobed.length;
      if (plan.unprobed.length > 0) stats.budgetExhausted = true;
      if (plan.adoptable !== undefined) {
        this.#teardown.rememberTimeout(plan.adoptable.info);
        if (await this.#adoptCanonical(plan.adoptable.info, plan.adoptable.remote, key, stores)) {
          stats.adopted += 1;
          this.#ctx.events.emit({ type: 'adopt', sandboxId: plan.adoptable.info.sandboxId });
        } else stats.deferred += 1;
      }
      stats.duplicates += plan.duplicates.length;
      for (const dup of plan.duplicates) {
        const outcome = await this.#reapAfter(dup, r.graceSeconds * 1000, false);
        if (outcome === 'killed') {
          stats.killed += 1;
          this.#ctx.events.emit({ type: 'reap', sandboxId: dup.sandboxId, reason: 'duplicate' });
        } else stats.deferred += 1;
      }
    }
    for (const orphan of orphans) {
      if (this.#ctx.isClosed()) break;
      const outcome = await this.#reapAfter(orphan, r.orphanTtlSeconds * 1000, true);
      if (outcome === 'killed') {
        stats.killed += 1;
        this.#ctx.events.emit({ type: 'reap', sandboxId: orphan.sandboxId, reason: 'orphan' });
      } else stats.deferred += 1;
    }
    this.forgetUnlisted(inventory);
    this.#ctx.logger.debug('E2B reconciliation pass', { ...stats });
    return stats;
  }

  /**
   * The VMs of this provider tag and this ledger, within the reconciliation budgets. Every path
   * that counts, adopts, reaps or shows VMs reads the same inventory.
   */
  async listOurs(stores: Stores, deadline: number): Promise<RemoteInventory> {
    const r = this.#ctx.settings.reconciliation;
    const inventory = await listRemoteInventory(
      this.#ctx.client,
      {
        query: {
          metadata: { [E2B_TAGS.provider]: E2B_PROVIDER_TAG_VALUE },
          ...(this.#ctx.settings.listStates ? { state: this.#ctx.settings.listStates } : {}),
        },
      },
      { maxPages: r.maxPages, maxItems: r.maxItems, deadlineMs: deadline },
      this.#ctx.clock,
      this.#ctx.logger,
    );
    return {
      ...inventory,
      entries: inventory.entries.filter((e) => belongsToLedger(e, stores.ledgerKey)),
    };
  }

  /** First sightings of VMs a complete listing no longer shows are dropped. */
  forgetUnlisted(inventory: RemoteInventory): void {
    if (!inventory.complete) return;
    const listed = inventory.entries.map((e) => e.sandboxId);
    this.#ctx.firstSeen.keepOnly(listed);
    this.#unowned.keepOnly(listed);
  }

  /**
   * The lease grace of an untracked VM (core's `leaseGraceVerdict`): it may be adopted or killed
   * only once seen unowned for a whole lease TTL. After a store flush every live owner re-claims
   * its leases within one renewal interval, shorter than the TTL by construction, while a crashed
   * one never does; without the wait, the first pass after a flush takes every live peer's VM.
   * Only time the store answered counts (an owner cannot re-claim during an outage), so a failed
   * store call seen here since the first sighting starts the wait again. A lease this instance
   * holds is no peer's (the claim then decides), and a store without cross-process visibility
   * shows no peer's lease to wait for. `remainingMs` is the wait left.
   */
  async leaseGrace(id: string): Promise<{ verdict: LeaseGraceVerdict; remainingMs: number }> {
    const ownership = await this.#own();
    if (!ownership.crossProcess) return { verdict: { kind: 'adoptable' }, remainingMs: 0 };
    const peek = await ownership.peek(id);
    if (peek.kind === 'held' && peek.holder.ownerId === ownership.ownerId) {
      this.#unowned.forget(id);
      return { verdict: { kind: 'adoptable' }, remainingMs: 0 };
    }
    const now = this.#ctx.clock.now();
    const graceMs = this.#ctx.ownershipConfig.leaseTtlSeconds * 1000;
    const { verdict, firstUnownedAt } = leaseGraceVerdict({
      crossProcess: true,
      peek,
      firstUnownedAt: this.#unowned.get(id),
      now,
      graceMs,
      storeFailedAt: this.#storeFailedAt,
    });
    this.#unowned.set(id, firstUnownedAt);
    const since = firstUnownedAt ?? now;
    return { verdict, remainingMs: Math.max(0, since + graceMs - now) };
  }

  /**
   * The canonical-VM rule of one (user, thread) group, shared by reconciliation and `reapOrphans`:
   * the VMs of this skills root are tried in order (this thread's own VM, then other locally
   * tracked ones, then oldest first) until one is tracked here or answers a liveness probe; the
   * rest of that root, and every VM prepared for another root, are duplicates. VMs that fail the
   * probe are neither canonical nor duplicates, and those the time budget left unprobed stay
   * undecided: a candidate that was never looked at must not turn its successors into duplicates.
   * The caller owns `adoptable.remote` (adopt it, or close it).
   */
  async planGroup(key: ThreadKey, infos: E2BSandboxInfo[], deadline: number): Promise<GroupPlan> {
    const mine = this.#ctx.book.threadSandbox(threadKeyText(key));
    const local = (id: string) => this.#ctx.isTrackedLocally(id);
    const sameRoot = infos
      .filter((i) => skillsRootOf(i, DEFAULT_SKILLS_ROOT) === this.#ctx.settings.skillsRoot)
      .sort(compareCandidates)
      .sort((a, b) => {
        const rank = (i: E2BSandboxInfo) => (i.sandboxId === mine ? 0 : local(i.sandboxId) ? 1 : 2);
        return rank(a) - rank(b);
      });
    // A VM prepared for another skills root is never adoptable; it is reaped like a duplicate.
    const plan: GroupPlan = {
      duplicates: infos.filter(
        (i) => skillsRootOf(i, DEFAULT_SKILLS_ROOT) !== this.#ctx.settings.skillsRoot,
      ),
      dead: [],
      unprobed: [],
    };
    let haveCanonical = false;
    for (const info of sameRoot) {
      if (haveCanonical) {
        plan.duplicates.push(info);
        continue;
      }
      if (local(info.sandboxId)) {
        haveCanonical = true;
        plan.localCanonical = info;
        continue;
      }
      if (this.#ctx.clock.now() >= deadline) {
        plan.unprobed.push(info);
        continue;
      }
      const probed = await this.#probe(info.sandboxId);
      if (probed === undefined) {
        plan.dead.push(info);
        continue;
      }
      haveCanonical = true;
      plan.adoptable = { info, remote: probed };
    }
    return plan;
  }

  /** Connect plus liveness probe; `undefined` when the VM is dead or unreachable. */
  async #probe(id: string): Promise<E2BRemoteSandbox | undefined> {
    let remote: E2BRemoteSandbox;
    try {
      remote = await this.#ctx.sdk(() => this.#ctx.client.connect(id));
    } catch {
      return undefined;
    }
    const sandbox = this.#ctx.adapter(id, remote);
    if (await sandbox.ping()) return remote;
    await remote.close().catch(() => undefined);
    return undefined;
  }

  async #adoptCanonical(
    info: E2BSandboxInfo,
    remote: E2BRemoteSandbox,
    key: ThreadKey,
    stores: Stores,
  ): Promise<boolean> {
    const id = info.sandboxId;
    const sandbox = this.#ctx.adapter(id, remote);
    if ((await this.leaseGrace(id)).verdict.kind !== 'adoptable') {
      await sandbox.close();
      return false;
    }
    // From the checks to the reservation and the in-flight mark in one synchronous step: an
    // acquire reserving during an await between them would take the slot counted free here, and a
    // reaper of this instance reads the mark before claiming (`reapKill`), as this reads its set.
    if (
      this.#ctx.isClosed() ||
      this.#capacity.total() >= this.#ctx.settings.capacityLimit ||
      this.#ctx.reaping.has(id)
    ) {
      await sandbox.close();
      return false;
    }
    const slot = this.#ctx.slots.reserve();
    this.#ctx.unownedRemoteOps.add(id);
    const endIntent = stores.ownership.holdIntent(id);
    try {
      if (stores.capacity !== undefined) {
        try {
          await stores.capacity.track(id, info.metadata[E2B_TAGS.capacityReservation] || undefined);
        } catch (error) {
          this.#ctx.logger.warn(
            'Tracking an e2b sandbox in the capacity ledger failed; not adopting it',
            {
              sandboxId: id,
              error: errorMessage(error),
            },
          );
          await sandbox.close();
          return false;
        }
      }
      if (!(await stores.ownership.claim(id, { forDestroy: false }))) {
        // A live peer holds it (or the store cannot say): nothing of ours is in flight, so the
        // slot is given back. A tombstone here would count a peer's VM against this instance,
        // hide it from discovery and every later pass (tracked locally), so it was never adopted
        // once the peer crashed, and a tombstone retry after the lapse would kill it instead.
        await sandbox.close();
        return false;
      }
      const failure = await runBootstrap(remote, this.#ctx.settings.homeDir);
      if (failure !== undefined) {
        if ((await this.#teardown.killAndClose(id, sandbox)) === 'failed') slot.tombstone(id);
        return false;
      }
      if (this.#ctx.isShuttingDown()) {
        await this.#teardown.killAndClose(id, sandbox);
        return false;
      }
      const seed = this.#ctx.seedOf(key);
      if (
        this.#ctx.book.hasThread(threadKeyText(key)) ||
        this.#ctx.book.pool.entries().some((e) => e.value.seed === seed)
      ) {
        // The thread got a sandbox meanwhile: this one is a duplicate, handled on a later pass.
        await (await this.#own()).release(id);
        await sandbox.close();
        return false;
      }
      // Parked warm, not active: nobody is using it yet. Its thread reclaims it on the next
      // acquire, and until then the idle checker and eviction can reap it like any warm VM.
      await this.#teardown.pushTimeout(remote);
      if (this.#ctx.book.pool.put(id, { seed, key }) === undefined) {
        await this.#teardown.killAndClose(id, sandbox);
        return false;
      }
      slot.commit();
      this.#unowned.forget(id);
      await sandbox.close();
      return true;
    } finally {
      // A failed adoption ends its intent mark and gives its slot back, whichever way it failed
      // (a committed or tombstoned slot ignores the release).
      endIntent();
      this.#ctx.unownedRemoteOps.delete(id);
      slot.release();
    }
  }

  async #reapAfter(
    info: E2BSandboxInfo,
    graceMs: number,
    orphan: boolean,
  ): Promise<'killed' | 'deferred'> {
    if (this.reapVerdict(info, graceMs, orphan).kind !== 'due') return 'deferred';
    if ((await this.leaseGrace(info.sandboxId)).verdict.kind !== 'adoptable') return 'deferred';
    return (await this.reapKill(info.sandboxId)).outcome === 'killed' ? 'killed' : 'deferred';
  }

  /**
   * The age rule of reaping, shared by reconciliation and `reapOrphans`: never a VM this instance
   * tracks; an orphan's age counts from its creation tag, a duplicate's (and an untagged orphan's)
   * from this instance's first sighting, so a VM a peer has just created and not yet published
   * gets the whole grace. Records the first sighting.
   */
  reapVerdict(info: E2BSandboxInfo, graceMs: number, orphan: boolean): ReapVerdict {
    const id = info.sandboxId;
    if (this.#ctx.isTrackedLocally(id)) return { kind: 'tracked' };
    const now = this.#ctx.clock.now();
    return ageVerdict({
      createdAt: orphan ? createdAtMs(info) : undefined,
      firstSeenAt: this.#ctx.firstSeen.observe(id, now),
      now,
      graceMs,
    });
  }

  /**
   * Kills a VM the age rule made due: only under a `del:` claim (a live peer's lease, or a store
   * that cannot answer, keeps it) and the held teardown marker; the ledger slot is released only
   * after the control plane confirmed the kill.
   */
  async reapKill(id: string): Promise<ReapKill> {
    // Re-checked here: a caller may have decided before an await that let this instance take it up.
    if (this.#ctx.isTrackedLocally(id)) return { outcome: 'tracked' };
    // Reconciliation and `reapOrphans` of one instance share the `del:` marker; one kill suffices.
    if (this.#ctx.reaping.has(id)) return { outcome: 'busy' };
    this.#ctx.reaping.add(id);
    try {
      const claim = await (await this.#own()).claimOutcome(id, { forDestroy: true });
      if (claim.outcome !== 'claimed') return claim;
      return await (
        await this.#own()
      ).heldTeardown(id, async (): Promise<ReapKill> => {
        try {
          const remote = await this.#ctx.sdk(() => this.#ctx.client.connect(id));
          try {
            const killed = await remote.kill();
            if (!killed) return { outcome: 'unconfirmed' };
          } finally {
            await remote.close().catch(() => undefined);
          }
          this.#ctx.firstSeen.forget(id);
          this.#unowned.forget(id);
          await this.#teardown.ledgerRelease(id);
          return { outcome: 'killed' };
        } catch (error) {
          this.#ctx.logger.info('Reaping an e2b sandbox failed; deferred', {
            sandboxId: id,
            error: errorMessage(error),
          });
          return { outcome: 'failed', error };
        }
      });
    } finally {
      this.#ctx.reaping.delete(id);
    }
  }

  // ------------------------------------------------------------------------------------------
  // CLI capabilities (`sbx ls`, `sbx gc`)
}
