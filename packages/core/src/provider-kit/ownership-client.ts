import type { Clock } from '../async/clock.js';
import { systemClock } from '../async/clock.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import type { SandboxProviderEvent } from '../contract/provider-events.js';
import { RenewOutcome } from '../ownership/ownership-store.js';
import type { OwnershipStore } from '../ownership/ownership-store.js';
import { withHeldTeardownLease } from '../ownership/teardown-lease.js';
import type { LeasePeek } from '../ownership/lease-peek.js';
import { errorMessage } from '../errors/error-inspection.js';

export interface OwnershipClientOptions {
  readonly store: OwnershipStore;
  /** The ownership renewal interval: a held teardown re-claims its `del:` marker this often. */
  readonly renewalIntervalMs: number;
  /** Receives an `ownership-error` event for every store call that failed. */
  readonly emit?: ((event: SandboxProviderEvent) => void) | undefined;
  readonly clock?: Clock | undefined;
  readonly logger?: Logger | undefined;
}

/** A `claim` answer that tells a peer's refusal from a store that could not answer. */
export type ClaimOutcome =
  | { readonly outcome: 'claimed' }
  | { readonly outcome: 'refused' }
  | { readonly outcome: 'unknown'; readonly error: unknown };

/**
 * The ownership protocol as a provider speaks it, over an `OwnershipStore`. Written once so every
 * provider has the same failure policy:
 * - acquire paths `publish` (take): a store error propagates (a sandbox whose ownership is not
 *   durable is never handed out);
 * - adopt and reap paths `claim`: fail-closed, an unanswerable store reads as "a peer owns it";
 * - renewal `refresh`es: fail-open, only a definitive `LOST` (or a refused re-claim of a lapsed
 *   lease) is false, so a store outage never makes an instance drop sandboxes it is using;
 * - every store failure is logged and reported as an `ownership-error` event.
 *
 * Two marks close the race between a renewal that heard `LOST` and an acquire that has just
 * re-taken the lease (the take is durable before `take()` returns, so the renewal's answer can be
 * stale by the time it acts):
 * - the intent mark, counted per id (concurrent publishes must not clear each other's), is set
 *   before the take's round trip and cleared after it;
 * - the acquire epoch, bumped by every successful publish: a renewal reads it before its round
 *   trip and may forget the sandbox only if it is unchanged afterwards.
 *
 * The client also knows which leases this instance believes it holds (`heldIds`) and which ids a
 * held teardown is stopping (`isTearingDown`), which renewal must skip: `renew` sees the `del:`
 * marker, not an `own:` lease, and would read our own teardown as a takeover.
 */
export class OwnershipClient {
  readonly store: OwnershipStore;
  readonly #renewalIntervalMs: number;
  readonly #emit: (event: SandboxProviderEvent) => void;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #intent = new Map<string, number>();
  readonly #epoch = new Map<string, number>();
  #epochCounter = 0;
  readonly #held = new Set<string>();
  readonly #tearingDown = new Map<string, number>();

  constructor(options: OwnershipClientOptions) {
    this.store = options.store;
    this.#renewalIntervalMs = options.renewalIntervalMs;
    this.#emit = options.emit ?? (() => undefined);
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
  }

  get ownerId(): string {
    return this.store.ownerId;
  }

  /** Whether peers' leases are visible here (false: the in-memory store). */
  get crossProcess(): boolean {
    return this.store.supportsCrossProcess;
  }

  /** Whether an acquire is publishing `id` right now. */
  hasIntent(id: string): boolean {
    return this.#intent.has(id);
  }

  /** The epoch of the last successful publish of `id` (0: none since it was forgotten). */
  epochOf(id: string): number {
    return this.#epoch.get(id) ?? 0;
  }

  /** Leases this instance took or claimed and has not released, forgotten or torn down. */
  heldIds(): string[] {
    return [...this.#held];
  }

  holds(id: string): boolean {
    return this.#held.has(id);
  }

  /** Whether a held teardown of `id` runs here (its `del:` marker is ours). */
  isTearingDown(id: string): boolean {
    return this.#tearingDown.has(id);
  }

  /** The sandbox is no longer this instance's: drops the epoch and the held mark, no store call. */
  forget(id: string): void {
    this.#epoch.delete(id);
    this.#held.delete(id);
  }

  /**
   * Acquire-path take (from anyone but a teardown). True: ours, and the epoch moved on; false: a
   * teardown holds it. A store error is reported and thrown.
   */
  async publish(id: string): Promise<boolean> {
    const endIntent = this.holdIntent(id);
    try {
      let taken: boolean;
      try {
        taken = await this.store.take(id);
      } catch (err) {
        this.#failed('take', id, err);
        throw err;
      }
      if (taken) {
        this.#epoch.set(id, ++this.#epochCounter);
        this.#held.add(id);
      }
      return taken;
    } finally {
      endIntent();
    }
  }

  /**
   * Marks an intent to own `id` for a span longer than one publish (an adoption that claims,
   * then bootstraps, then parks): renewal must not forget it meanwhile. Returns the end of the
   * mark, idempotent.
   */
  holdIntent(id: string): () => void {
    this.#intent.set(id, (this.#intent.get(id) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.#intent.get(id) ?? 1) - 1;
      if (left > 0) this.#intent.set(id, left);
      else this.#intent.delete(id);
    };
  }

  /** Adopt/reap gate, fail-closed. */
  async claim(id: string, options: { forDestroy: boolean }): Promise<boolean> {
    return (await this.claimOutcome(id, options)).outcome === 'claimed';
  }

  async claimOutcome(id: string, options: { forDestroy: boolean }): Promise<ClaimOutcome> {
    try {
      if (!(await this.store.claim(id, { forDestroy: options.forDestroy }))) {
        return { outcome: 'refused' };
      }
      this.#held.add(id);
      return { outcome: 'claimed' };
    } catch (error) {
      this.#failed('claim', id, error);
      this.#logger.warn(`Could not claim sandbox ${id}; treating it as another instance's`, {
        error: errorMessage(error),
      });
      return { outcome: 'unknown', error };
    }
  }

  /** Gives the lease up; a store failure is logged (the lease then lapses on its TTL). */
  async release(id: string): Promise<void> {
    this.#held.delete(id);
    try {
      await this.store.release(id);
    } catch (err) {
      this.#failed('release', id, err);
      this.#logger.warn(`Could not release the lease of sandbox ${id}`, {
        error: errorMessage(err),
      });
    }
  }

  /**
   * Renewal, fail-open. An absent lease (`LAPSED`: a store restart, a flush) is re-claimed; a
   * store that cannot answer either round trip means unknown, so the sandbox is kept.
   */
  async refresh(id: string): Promise<boolean> {
    let outcome: RenewOutcome;
    try {
      outcome = await this.store.renew(id);
    } catch (err) {
      this.#failed('renew', id, err);
      this.#logger.warn(`Could not renew the lease of sandbox ${id}; keeping it`, {
        error: errorMessage(err),
      });
      return true;
    }
    if (outcome === RenewOutcome.RENEWED) return true;
    if (outcome === RenewOutcome.LOST) return false;
    try {
      const claimed = await this.store.claim(id);
      if (claimed) this.#logger.info(`Re-established the lapsed lease of sandbox ${id}`);
      return claimed;
    } catch (err) {
      this.#failed('claim', id, err);
      this.#logger.warn(`Could not re-claim the lapsed lease of sandbox ${id}; keeping it`, {
        error: errorMessage(err),
      });
      return true;
    }
  }

  /** A read-only look; a failure is reported and answered as `unknown`. */
  async peek(id: string): Promise<LeasePeek> {
    try {
      const holder = await this.store.owner(id);
      return holder === undefined ? { kind: 'absent' } : { kind: 'held', holder };
    } catch (error) {
      this.#failed('owner', id, error);
      return { kind: 'unknown', error };
    }
  }

  /** A peer holds the lease (`own:` or `del:`); false when it is ours, absent, or unknown. */
  async heldByPeer(id: string): Promise<boolean> {
    const peek = await this.peek(id);
    return peek.kind === 'held' && peek.holder.ownerId !== this.ownerId;
  }

  /**
   * Runs `stop` under the `del:` marker the caller has just claimed (core's
   * `withHeldTeardownLease`). The lease is not ours afterwards, whatever the outcome.
   */
  async heldTeardown<T>(id: string, stop: () => Promise<T>): Promise<T> {
    this.#tearingDown.set(id, (this.#tearingDown.get(id) ?? 0) + 1);
    try {
      return await withHeldTeardownLease(
        {
          store: this.store,
          sandboxId: id,
          intervalMs: this.#renewalIntervalMs,
          clock: this.#clock,
          logger: this.#logger,
        },
        stop,
      );
    } finally {
      const left = (this.#tearingDown.get(id) ?? 1) - 1;
      if (left > 0) this.#tearingDown.set(id, left);
      else this.#tearingDown.delete(id);
      this.#held.delete(id);
    }
  }

  #failed(operation: string, sandboxId: string, error: unknown): void {
    this.#emit({ type: 'ownership-error', operation, sandboxId, error });
  }
}
