import { SandboxRuntimeError, sleep, throwIfAborted } from '@sbx/core';
import type {
  LeaseHolder,
  ListSandboxesOptions,
  OrphanReapReport,
  ReapOrphansOptions,
  SandboxSummary,
} from '@sbx/core';
import { DEFAULT_SKILLS_ROOT } from '@sbx/core/internal';
import type { E2BSandboxInfo } from './e2b-client.js';
import { errorMessage } from './e2b-errors.js';
import { createdAtMs, skillsRootOf } from './metadata.js';
import type { RemoteInventory } from './remote-inventory.js';
import {
  groupByThread,
  holderReason,
  isoTime,
  specLabelsOf,
  taggedThread,
  wholeSeconds,
} from './e2b-thread-key.js';
import type { ReapDecision } from './e2b-thread-key.js';
import type { E2BReconciler } from './e2b-reconciler.js';
import type { E2BProviderContext } from './e2b-provider-context.js';

/**
 * One listed VM (core's `SandboxSummary`). User and thread come from the VM's tags (or this
 * instance's record); `state` is `active` / `warm` when this instance tracks it, else the control
 * plane's (`running`, `paused`); `updatedAt` is when a warm VM was parked, else its creation tag
 * (else its start time); `location` is `e2b:<template>`.
 */
export type E2BSandboxSummary = SandboxSummary;

export type E2BListSandboxesOptions = ListSandboxesOptions;

export interface E2BReapOrphansOptions extends ReapOrphansOptions {
  /**
   * A duplicate's grace counts from this instance's first sighting, so a fresh process sees every
   * duplicate inside it. By default the call waits the rest of that grace (on the provider's
   * clock) and looks again; `false` takes one look and keeps such duplicates with that reason.
   */
  waitForGrace?: boolean | undefined;
}

export type E2BOrphanReapReport = OrphanReapReport;

/** `sbx ls` and `sbx gc`: the listing with this instance's view, and reaping by reconciliation's rules. */
export class E2BInspection {
  readonly #ctx: E2BProviderContext;
  readonly #reconciler: E2BReconciler;

  constructor(ctx: E2BProviderContext, reconciler: E2BReconciler) {
    this.#ctx = ctx;
    this.#reconciler = reconciler;
  }

  /**
   * Every VM of this provider tag and ledger, within the reconciliation budgets, with this
   * instance's view (`active` / `warm`) or else the control plane's state. Reads only: nothing is
   * probed, claimed or killed.
   */
  async listSandboxes(options: E2BListSandboxesOptions = {}): Promise<E2BSandboxSummary[]> {
    const deadline = this.#ctx.clock.now() + this.#ctx.settings.reconciliation.maxSeconds * 1000;
    const inventory = await this.#inspectInventory(deadline, options.signal);
    return inventory.entries.map((info): E2BSandboxSummary => {
      const id = info.sandboxId;
      const active = this.#ctx.book.active(id);
      const warm = active === undefined ? this.#ctx.book.pool.get(id) : undefined;
      const key = active?.key ?? warm?.value.key ?? taggedThread(info);
      const updatedAt = isoTime(
        warm !== undefined ? warm.releasedAt : (createdAtMs(info) ?? info.startedAt?.getTime()),
      );
      return {
        id,
        ...(key !== undefined ? { userId: key.userId, threadId: key.threadId } : {}),
        // A warm VM the control plane says is paused is shown paused (`sbx ls`).
        state:
          active !== undefined
            ? 'active'
            : warm !== undefined
              ? info.state === 'paused'
                ? 'paused'
                : 'warm'
              : info.state,
        ...(updatedAt !== undefined ? { updatedAt } : {}),
        location: info.templateId ? `e2b:${info.templateId}` : 'e2b',
        ...specLabelsOf(info),
      };
    });
  }

  /**
   * Kills orphans and duplicates by reconciliation's own rules, through the same code (canonical
   * choice, age rule, claimed kill): never a VM this instance tracks, nor a thread's canonical
   * VM; duplicates after `reconciliation_grace_seconds` from this instance's first sighting,
   * untagged orphans after `reconciliation_orphan_ttl_seconds` from their creation tag; every kill
   * under a `del:` claim (a live peer's lease, or a store that cannot answer, keeps the VM) and
   * the held teardown marker. Nothing is adopted. A fresh process has seen no duplicate before, so unless
   * `waitForGrace` is `false` it waits out the grace on the provider's clock and looks again.
   * `dryRun` makes the same looks (including the liveness probes that pick each thread's
   * canonical VM) and predicts each claim from the store's read-only owner peek.
   */
  async reapOrphans(options: E2BReapOrphansOptions = {}): Promise<E2BOrphanReapReport> {
    const { signal } = options;
    const dryRun = options.dryRun === true;
    let look = await this.#reapLook(signal);
    let waitMs = 0;
    for (const d of look.values()) if (d.kind === 'wait') waitMs = Math.max(waitMs, d.remainingMs);
    if (waitMs > 0 && options.waitForGrace !== false) {
      await this.#sleep(waitMs, signal);
      this.#ctx.assertOpen();
      // Listed and decided again: a VM gone meanwhile is nobody's to reap, and a thread whose
      // canonical VM died meanwhile may now have its former duplicate as the canonical one.
      look = await this.#reapLook(signal);
    }
    const reaped: string[] = [];
    const kept: { id: string; reason: string }[] = [];
    for (const [id, decision] of look) {
      throwIfAborted(signal);
      if (decision.kind !== 'reap') {
        kept.push({ id, reason: decision.reason });
        continue;
      }
      const reason = dryRun ? await this.#wouldKeep(id) : await this.#reapOrKeep(id);
      if (reason === undefined) reaped.push(id);
      else kept.push({ id, reason });
    }
    if (reaped.length > 0) {
      this.#ctx.logger.info(
        dryRun ? 'E2B sandboxes that would be reaped' : 'Reaped orphaned e2b sandboxes',
        { reaped },
      );
    }
    return { reaped, kept };
  }

  /** The inventory an inspection reads; a listing that failed outright is an error, not "none". */
  async #inspectInventory(
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<RemoteInventory> {
    this.#ctx.assertOpen();
    throwIfAborted(signal);
    await this.#ctx.ready();
    // After an in-flight reconciliation pass, so a VM it is adopting is not caught half-way.
    await this.#ctx.reconciling()?.catch(() => undefined);
    throwIfAborted(signal);
    const inventory = await this.#reconciler.listOurs(await this.#ctx.stores(), deadline);
    throwIfAborted(signal);
    if (inventory.error !== undefined && inventory.entries.length === 0) {
      throw new SandboxRuntimeError(
        `Listing e2b sandboxes failed: ${errorMessage(inventory.error)}`,
        { cause: inventory.error },
      );
    }
    if (!inventory.complete) {
      this.#ctx.logger.warn('The e2b sandbox listing is incomplete; VMs beyond it are left out', {
        listed: inventory.entries.length,
        budgetExhausted: inventory.budgetExhausted,
      });
    }
    return inventory;
  }

  /** One look: every listed VM's fate under the reconciliation rules, in listing order. */
  async #reapLook(signal: AbortSignal | undefined): Promise<Map<string, ReapDecision>> {
    const r = this.#ctx.settings.reconciliation;
    const deadline = this.#ctx.clock.now() + r.maxSeconds * 1000;
    const inventory = await this.#inspectInventory(deadline, signal);
    const decisions = new Map<string, ReapDecision>();
    // Placeholders keep the listing order; every entry is decided below.
    for (const info of inventory.entries) {
      decisions.set(info.sandboxId, { kind: 'keep', reason: 'undecided' });
    }
    const keep = (info: E2BSandboxInfo, reason: string) =>
      decisions.set(info.sandboxId, { kind: 'keep', reason });
    const { groups, orphans } = groupByThread(inventory.entries);
    for (const { key, infos } of groups) {
      throwIfAborted(signal);
      const thread = `${key.userId}/${key.threadId}`;
      const plan = await this.#reconciler.planGroup(key, infos, deadline);
      if (plan.adoptable !== undefined) {
        await plan.adoptable.remote.close().catch(() => undefined);
        keep(plan.adoptable.info, `the canonical sandbox of thread ${thread}`);
      }
      if (plan.localCanonical !== undefined) {
        keep(plan.localCanonical, this.#trackedReason(plan.localCanonical.sandboxId));
      }
      for (const info of plan.dead) {
        keep(
          info,
          'did not answer its liveness probe: reconciliation leaves it to its E2B timeout',
        );
      }
      for (const info of plan.unprobed) {
        keep(info, 'not probed: the reconciliation_max_seconds budget ran out');
      }
      for (const info of plan.duplicates) {
        const root = skillsRootOf(info, DEFAULT_SKILLS_ROOT);
        const what =
          root === this.#ctx.settings.skillsRoot
            ? `duplicate of thread ${thread}`
            : `prepared for skills root ${root} (thread ${thread})`;
        const d = await this.#ageDecision(info, r.graceSeconds * 1000, false, what);
        decisions.set(info.sandboxId, d);
      }
    }
    for (const info of orphans) {
      decisions.set(
        info.sandboxId,
        await this.#ageDecision(info, r.orphanTtlSeconds * 1000, true, 'no user/thread tags'),
      );
    }
    this.#reconciler.forgetUnlisted(inventory);
    return decisions;
  }

  async #ageDecision(
    info: E2BSandboxInfo,
    graceMs: number,
    orphan: boolean,
    what: string,
  ): Promise<ReapDecision> {
    const verdict = this.#reconciler.reapVerdict(info, graceMs, orphan);
    if (verdict.kind === 'tracked') {
      return { kind: 'keep', reason: this.#trackedReason(info.sandboxId) };
    }
    if (verdict.kind === 'due') return this.#leaseDecision(info.sandboxId, what);
    const setting = orphan ? 'reconciliation_orphan_ttl_seconds' : 'reconciliation_grace_seconds';
    const since = verdict.from === 'created' ? 'since its creation tag' : 'since first seen';
    const reason = `${what}: inside the ${wholeSeconds(graceMs)} s ${setting} (${wholeSeconds(verdict.ageMs)} s ${since})`;
    // Only a duplicate's grace is short and counted from a sighting that waiting can age.
    return orphan
      ? { kind: 'keep', reason }
      : { kind: 'wait', remainingMs: graceMs - verdict.ageMs, reason };
  }

  /**
   * A VM the age rule made due waits out its lease grace too (see `leaseGrace`); a lease a peer
   * holds, or a store that cannot answer, is left to the `del:` claim, which refuses it.
   */
  async #leaseDecision(id: string, what: string): Promise<ReapDecision> {
    const { verdict, remainingMs } = await this.#reconciler.leaseGrace(id);
    if (verdict.kind !== 'waiting') return { kind: 'reap' };
    const ttl = wholeSeconds(this.#ctx.ownershipConfig.leaseTtlSeconds * 1000);
    return {
      kind: 'wait',
      remainingMs,
      reason: `${what}: unowned for less than the ${ttl} s lease TTL (a live owner re-claims its lease within one renewal interval)`,
    };
  }

  #trackedReason(id: string): string {
    if (this.#ctx.book.isActive(id)) return 'active in this instance';
    if (this.#ctx.book.pool.has(id)) return 'warm in this instance';
    if (this.#ctx.slots.tombstones.has(id))
      return 'tombstoned in this instance (its kill is retried here)';
    return 'in flight in this instance (being created, adopted or handed over)';
  }

  /** Kills a due VM; `undefined` once killed, else the rule that kept it. */
  async #reapOrKeep(id: string): Promise<string | undefined> {
    const result = await this.#reconciler.reapKill(id);
    switch (result.outcome) {
      case 'killed':
        return undefined;
      case 'tracked':
        return this.#trackedReason(id);
      case 'busy':
        return 'being reaped by this instance already';
      case 'refused': {
        const holder = await this.#peekOwner(id);
        return holder !== undefined && !('error' in holder)
          ? holderReason(holder)
          : 'claim for destroy refused: another instance holds its lease';
      }
      case 'unknown':
        return `the ownership store cannot answer (${errorMessage(result.error)}): counted as owned by a peer`;
      case 'unconfirmed':
        return 'E2B did not confirm the kill (it may already be gone); its ledger slot is left to reconciliation';
      case 'failed':
        return `the kill failed (${errorMessage(result.error)}); it may still run`;
    }
  }

  /** The dry run's `#reapOrKeep`: predicts the `del:` claim from the read-only owner peek. */
  async #wouldKeep(id: string): Promise<string | undefined> {
    if (this.#ctx.isTrackedLocally(id)) return this.#trackedReason(id);
    if (this.#ctx.reaping.has(id)) return 'being reaped by this instance already';
    const holder = await this.#peekOwner(id);
    if (holder === undefined) return undefined;
    if ('error' in holder) {
      return `the ownership store cannot answer (${errorMessage(holder.error)}): counted as owned by a peer`;
    }
    // A destroy claim succeeds over our own lease in either state.
    if (holder.ownerId === (await this.#ctx.stores()).ownership.ownerId) return undefined;
    return holderReason(holder);
  }

  async #peekOwner(id: string): Promise<LeaseHolder | { error: unknown } | undefined> {
    const peek = await (await this.#ctx.stores()).ownership.peek(id);
    if (peek.kind === 'held') return peek.holder;
    if (peek.kind === 'absent') return undefined;
    this.#ctx.logger.warn('Reading the owner of an e2b sandbox failed', {
      sandboxId: id,
      error: errorMessage(peek.error),
    });
    return { error: peek.error };
  }

  /** Waits on the provider's clock; ref'd (core's `sleep`), since in a one-shot CLI process nothing else may be. */
  #sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return sleep(ms, { clock: this.#ctx.clock, signal });
  }
}
