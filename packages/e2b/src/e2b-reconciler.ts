import { DEFAULT_SKILLS_ROOT } from '@sbx/core/internal';
import { ageVerdict } from '@sbx/core/provider-kit';
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
 */
export class E2BReconciler {
  readonly #ctx: E2BProviderContext;
  readonly #teardown: E2BTeardown;
  readonly #capacity: E2BCapacity;

  constructor(ctx: E2BProviderContext, teardown: E2BTeardown, capacity: E2BCapacity) {
    this.#ctx = ctx;
    this.#teardown = teardown;
    this.#capacity = capacity;
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
    this.#ctx.firstSeen.keepOnly(inventory.entries.map((e) => e.sandboxId));
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
    if (this.#ctx.isClosed() || this.#capacity.total() >= this.#ctx.settings.capacityLimit) {
      await sandbox.close();
      return false;
    }
    if (stores.capacity !== undefined) {
      try {
        await stores.capacity.track(id, info.metadata[E2B_TAGS.capacityReservation] || undefined);
      } catch {
        await sandbox.close();
        return false;
      }
    }
    const slot = this.#ctx.slots.reserve();
    this.#ctx.unownedRemoteOps.add(id);
    const endIntent = stores.ownership.holdIntent(id);
    try {
      if (!(await stores.ownership.claim(id, { forDestroy: false }))) {
        // A live peer holds it (or the store cannot say): nothing of ours is in flight, so the
        // slot is given back. A tombstone here would count a peer's VM against this instance,
        // hide it from discovery and every later pass (tracked locally), so it was never adopted
        // once the peer crashed, and a tombstone retry after the lapse would kill it instead.
        slot.release();
        await sandbox.close();
        return false;
      }
      const failure = await runBootstrap(remote, this.#ctx.settings.homeDir);
      if (failure !== undefined) {
        const outcome = await this.#teardown.killAndClose(id, sandbox);
        if (outcome === 'failed') slot.tombstone(id);
        else slot.release();
        return false;
      }
      if (this.#ctx.isShuttingDown()) {
        await this.#teardown.killAndClose(id, sandbox);
        slot.release();
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
        slot.release();
        return false;
      }
      // Parked warm, not active: nobody is using it yet. Its thread reclaims it on the next
      // acquire, and until then the idle checker and eviction can reap it like any warm VM.
      await this.#teardown.pushTimeout(remote);
      if (this.#ctx.book.pool.put(id, { seed, key }) === undefined) {
        await this.#teardown.killAndClose(id, sandbox);
        slot.release();
        return false;
      }
      slot.commit();
      await sandbox.close();
      return true;
    } finally {
      endIntent();
      this.#ctx.unownedRemoteOps.delete(id);
      if (!slot.done) slot.release();
    }
  }

  async #reapAfter(
    info: E2BSandboxInfo,
    graceMs: number,
    orphan: boolean,
  ): Promise<'killed' | 'deferred'> {
    if (this.reapVerdict(info, graceMs, orphan).kind !== 'due') return 'deferred';
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
