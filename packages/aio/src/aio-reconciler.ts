import {
  AbortedError,
  InvalidArgumentError,
  errorMessage,
  isValidSandboxId,
  sleep,
} from '@sbx/core';
import type {
  ListSandboxesOptions,
  OrphanReapReport,
  ReapOrphansOptions,
  SandboxSummary,
} from '@sbx/core';
import { Sightings, describeLease, leaseGraceVerdict } from '@sbx/core/provider-kit';
import type { LeaseGraceVerdict } from '@sbx/core/provider-kit';
import { identityFields } from './aio-identity.js';
import type { AioProviderContext } from './aio-provider-context.js';
import { UNTRACKED_STOP_REASONS } from './aio-teardown.js';
import type { AioTeardown } from './aio-teardown.js';
import type { SandboxInfo } from './sandbox-info.js';

/** What one reconciliation pass did. */
export interface ReconcileSummary {
  /** Untracked containers adopted into the warm pool. */
  adopted: string[];
  /** Owned by a peer, or the store could not answer the claim. */
  skipped: string[];
  /** Still inside their grace, or being torn down here. */
  deferred: string[];
  /** Containers the backend listed. */
  total: number;
  /** The pass stopped at its item or time budget; the rest waits for the next pass. */
  budgetExhausted: boolean;
}

export interface AioReapOrphansOptions extends ReapOrphansOptions {
  /**
   * How long an untracked container must stay unowned before it is reaped, on a store with
   * cross-process visibility. Default: the lease TTL (the reconciliation grace).
   */
  graceMs?: number | undefined;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError(undefined, { cause: signal.reason });
}

/**
 * Untracked containers: adopted into the warm pool by reconciliation, listed for `sbx ls`,
 * stopped by `reapOrphans`. Both adopt and reap apply the lease grace of the provider kit
 * (`leaseGraceVerdict`), from sightings kept here across passes.
 */
export class AioReconciler {
  readonly #ctx: AioProviderContext;
  readonly #teardown: AioTeardown;
  readonly #unowned = new Sightings();
  /** When a store call of this instance last failed: the grace counts only time after it. */
  #storeFailedAt: number | undefined;

  constructor(ctx: AioProviderContext, teardown: AioTeardown) {
    this.#ctx = ctx;
    this.#teardown = teardown;
    ctx.events.onEvent((event) => {
      if (event.type === 'ownership-error') this.#storeFailedAt = ctx.clock.now();
    });
  }

  clear(): void {
    this.#unowned.clear();
  }

  /**
   * Adopts untracked running containers into the warm pool, where expiry and reclaim treat them
   * like any other. An untracked container must be seen unowned for a whole lease TTL first; the
   * atomic `claim` is still what gates adoption.
   */
  async reconcilePass(): Promise<ReconcileSummary> {
    const { book, backend, clock, logger, settings } = this.#ctx;
    const summary: ReconcileSummary = {
      adopted: [],
      skipped: [],
      deferred: [],
      total: 0,
      budgetExhausted: false,
    };
    let listed: SandboxInfo[];
    try {
      listed = await backend.listRunning();
    } catch (err) {
      logger.warn('Could not list running sandboxes for reconciliation', {
        error: errorMessage(err),
      });
      return summary;
    }
    this.#unowned.keepOnly(listed.map((info) => info.sandboxId));
    summary.total = listed.length;
    const started = clock.now();
    const budgetMs = settings.reconcile.maxSeconds * 1000;
    let looked = 0;
    for (const info of listed) {
      const id = info.sandboxId;
      if (book.isTracked(id)) continue;
      if (
        looked >= settings.reconcile.maxItems ||
        clock.now() - started > budgetMs ||
        this.#ctx.isClosed()
      ) {
        summary.budgetExhausted = true;
        break;
      }
      looked += 1;
      if (!isValidSandboxId(id)) {
        summary.skipped.push(id);
        continue;
      }
      // A container being torn down or created here is untracked and still running: exactly
      // what this loop adopts, and neither our own claim nor the grace would exclude it.
      if (
        book.pool.isReserved(id) ||
        book.isCreating(id) ||
        (await this.#graceVerdict(id, this.#ctx.leaseTtlMs)).kind !== 'adoptable'
      ) {
        summary.deferred.push(id);
        continue;
      }
      if (!(await this.#ctx.ownership().claim(id, { forDestroy: false }))) {
        summary.skipped.push(id);
        continue;
      }
      if (book.isTracked(id)) continue;
      // Refused while a teardown here holds the id (reserved after the claim was sent).
      if (book.pool.put(id, { info, identity: undefined }) === undefined) {
        summary.deferred.push(id);
        continue;
      }
      this.#unowned.forget(id);
      summary.adopted.push(id);
      this.#ctx.events.emit({ type: 'adopt', sandboxId: id });
    }
    if (summary.adopted.length > 0 || summary.deferred.length > 0 || summary.skipped.length > 0) {
      logger.info('Reconciled sandbox containers', {
        adopted: summary.adopted.length,
        skipped: summary.skipped.length,
        deferred: summary.deferred.length,
        total: summary.total,
        budget_exhausted: summary.budgetExhausted,
      });
    }
    return summary;
  }

  async #graceVerdict(id: string, graceMs: number): Promise<LeaseGraceVerdict> {
    const ownership = this.#ctx.ownership();
    // No peer can hold a lease such a store would show us: nothing to read.
    if (!ownership.crossProcess) return { kind: 'adoptable' };
    const { verdict, firstUnownedAt } = leaseGraceVerdict({
      crossProcess: true,
      peek: await ownership.peek(id),
      firstUnownedAt: this.#unowned.get(id),
      now: this.#ctx.clock.now(),
      graceMs,
      storeFailedAt: this.#storeFailedAt,
    });
    this.#unowned.set(id, firstUnownedAt);
    return verdict;
  }

  /**
   * Every container the backend lists, with this instance's view (`active` / `warm`) or, for an
   * untracked one, the ownership store's read-only peek. Claims and stops nothing.
   */
  async listSandboxes(options: ListSandboxesOptions): Promise<SandboxSummary[]> {
    const { book, backend } = this.#ctx;
    throwIfAborted(options.signal);
    const listed = await backend.listRunning(
      options.signal ? { signal: options.signal } : undefined,
    );
    const out: SandboxSummary[] = [];
    for (const info of listed) {
      throwIfAborted(options.signal);
      const id = info.sandboxId;
      const location = info.containerName || info.sandboxUrl || undefined;
      const labelled = info.labels ? { labels: info.labels } : {};
      const active = book.active(id);
      if (active !== undefined) {
        const at = book.lastActivity(id);
        out.push({
          id,
          ...identityFields(active.identity),
          state: info.paused === true ? 'paused' : 'active',
          ...(at !== undefined ? { updatedAt: new Date(at).toISOString() } : {}),
          location,
          ...labelled,
        });
        continue;
      }
      const warm = book.pool.get(id);
      if (warm !== undefined) {
        out.push({
          id,
          ...identityFields(warm.value.identity),
          state: info.paused === true ? 'paused' : 'warm',
          updatedAt: new Date(warm.releasedAt).toISOString(),
          location,
          ...labelled,
        });
        continue;
      }
      const owner = await this.#ownerState(id);
      // Paused is the container's own state, whoever owns it: said first, the owner after it.
      const state = info.paused === true ? `paused, ${owner}` : owner;
      out.push({ id, state, location, ...labelled });
    }
    return out;
  }

  async #ownerState(id: string): Promise<string> {
    const peek = await this.#ctx.ownership().peek(id);
    if (peek.kind === 'unknown') {
      this.#ctx.logger.warn(`Could not read the owner of sandbox ${id}`, {
        error: errorMessage(peek.error),
      });
    }
    return describeLease(peek);
  }

  /**
   * Stops untracked containers under reconciliation's rules: seen unowned for the whole grace
   * (observed, then observed again `graceMs` later on the provider's clock, unless the store has
   * no cross-process visibility or an earlier reconciliation already started the wait), then
   * claimed for destroy and stopped under a held teardown lease. A process that just started has
   * no earlier sightings, so without the second look a lease lost to a store flush would read as
   * an orphan while its live owner is about to republish it.
   */
  async reapOrphans(options: AioReapOrphansOptions): Promise<OrphanReapReport> {
    const { signal } = options;
    const { backend, logger } = this.#ctx;
    const dryRun = options.dryRun === true;
    const graceMs = options.graceMs ?? this.#ctx.leaseTtlMs;
    if (!(graceMs >= 0) || !Number.isFinite(graceMs)) {
      throw new InvalidArgumentError(`graceMs must be a finite number >= 0, got ${graceMs}`);
    }
    throwIfAborted(signal);
    const listed = await backend.listRunning(signal ? { signal } : undefined);
    const kept: { id: string; reason: string }[] = [];
    const reaped: string[] = [];
    const keep = (id: string, reason: string) => kept.push({ id, reason });

    let candidates = await this.#orphanPass(listed, graceMs, keep, signal);
    if (candidates.waiting.length > 0) {
      // Ref'd (core's `sleep`): in a one-shot CLI process this wait is the only thing keeping it
      // alive.
      await sleep(graceMs, { clock: this.#ctx.clock, signal });
      // Listed again: a container stopped meanwhile is nobody's to reap, and one that appeared
      // meanwhile has had no first look.
      const waiting = new Set(candidates.waiting.map((info) => info.sandboxId));
      const relisted = await backend.listRunning(signal ? { signal } : undefined);
      const stillThere = relisted.filter((info) => waiting.has(info.sandboxId));
      const again = await this.#orphanPass(stillThere, graceMs, keep, signal);
      for (const info of again.waiting) keep(info.sandboxId, 'unowned, still inside its grace');
      candidates = { adoptable: [...candidates.adoptable, ...again.adoptable], waiting: [] };
    }
    for (const info of candidates.adoptable) {
      throwIfAborted(signal);
      const id = info.sandboxId;
      if (dryRun) {
        reaped.push(id);
        continue;
      }
      const outcome = await this.#teardown.destroyUntracked(id, info);
      if (outcome === 'stopped') {
        reaped.push(id);
        this.#unowned.forget(id);
      } else keep(id, UNTRACKED_STOP_REASONS[outcome]);
    }
    if (reaped.length > 0) {
      logger.info(dryRun ? 'Orphan sandboxes that would be reaped' : 'Reaped orphan sandboxes', {
        reaped,
      });
    }
    return { reaped, kept };
  }

  /** One look at each container; those kept for good are reported through `keep`. */
  async #orphanPass(
    listed: readonly SandboxInfo[],
    graceMs: number,
    keep: (id: string, reason: string) => void,
    signal: AbortSignal | undefined,
  ): Promise<{ adoptable: SandboxInfo[]; waiting: SandboxInfo[] }> {
    const { book } = this.#ctx;
    const adoptable: SandboxInfo[] = [];
    const waiting: SandboxInfo[] = [];
    for (const info of listed) {
      throwIfAborted(signal);
      const id = info.sandboxId;
      if (book.isActive(id)) keep(id, 'active in this instance');
      else if (book.isCreating(id)) keep(id, 'being created by this instance');
      else if (book.pool.has(id)) keep(id, 'warm in this instance');
      else if (book.pool.isReserved(id)) keep(id, 'being torn down by this instance');
      else if (!isValidSandboxId(id)) keep(id, 'not a valid sandbox id');
      else {
        const verdict = await this.#graceVerdict(id, graceMs);
        if (verdict.kind === 'adoptable') adoptable.push(info);
        else if (verdict.kind === 'waiting') waiting.push(info);
        else if (verdict.kind === 'unknown') {
          keep(
            id,
            `owner unknown: the ownership store cannot answer (${errorMessage(verdict.error)})`,
          );
        } else if (verdict.holder.state === 'del') {
          keep(id, `being destroyed by ${verdict.holder.ownerId}`);
        } else keep(id, `owned by ${verdict.holder.ownerId}`);
      }
    }
    return { adoptable, waiting };
  }
}
