import { randomUUID } from 'node:crypto';
import { CapacityReserveOutcome, SandboxCapacityExceededError } from '@sbx/core';
import { errorMessage } from './e2b-errors.js';
import type { Slot } from './local-slots.js';
import { SHUTDOWN_RETRY_AFTER_SECONDS } from './e2b-thread-key.js';
import type { E2BTeardown } from './e2b-teardown.js';
import type { OwnershipClient } from '@sbx/core/provider-kit';
import type { E2BProviderContext, Stores } from './e2b-provider-context.js';

/**
 * Capacity: local slots under the overflow policy (`wait`, `reject`, `burst`), the
 * deployment-wide ledger reservation of a create, and eviction (a tombstone retried first, else
 * the oldest warm VM). Waiters are woken by `notify` whenever a slot may have freed.
 */
export class E2BCapacity {
  readonly #ctx: E2BProviderContext;
  readonly #teardown: E2BTeardown;
  readonly #waiters = new Set<() => void>();

  constructor(ctx: E2BProviderContext, teardown: E2BTeardown) {
    this.#ctx = ctx;
    this.#teardown = teardown;
  }

  async #own(): Promise<OwnershipClient> {
    return (await this.#ctx.stores()).ownership;
  }

  total(): number {
    return this.#ctx.book.activeCount + this.#ctx.book.pool.size + this.#ctx.slots.held;
  }

  deadline(): number {
    return this.#ctx.clock.now() + this.#ctx.settings.acquireTimeoutSeconds * 1000;
  }

  notify(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Resolves when a slot may have freed, or after `ms` (on the provider's clock). */
  #waitForSlot(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.#ctx.clock.setTimeout(() => {
        this.#waiters.delete(wake);
        resolve();
      }, ms);
      const wake = (): void => {
        this.#ctx.clock.clearTimeout(timer);
        resolve();
      };
      this.#waiters.add(wake);
    });
  }

  capacityError(
    message: string,
    reason: string,
    extra: { retryAfterSeconds?: number; cause?: unknown } = {},
  ): SandboxCapacityExceededError {
    return new SandboxCapacityExceededError(
      message,
      {
        active: this.#ctx.book.activeCount,
        warm: this.#ctx.book.pool.size,
        reserved: this.#ctx.slots.reserved,
        replicas: this.#ctx.settings.replicas,
        reason,
        retryAfterSeconds: extra.retryAfterSeconds ?? 5,
      },
      extra.cause === undefined ? {} : { cause: extra.cause },
    );
  }

  #shutdownCapacityError(message = 'Sandbox provider is shutting down; cannot acquire capacity') {
    return this.capacityError(message, 'shutdown', {
      retryAfterSeconds: SHUTDOWN_RETRY_AFTER_SECONDS,
    });
  }

  /** One local slot under the overflow policy; `wait` waits until `deadline`. */
  async reserveLocal(deadline: number): Promise<Slot> {
    const { capacityLimit: limit, overflowPolicy: policy } = this.#ctx.settings;
    for (;;) {
      if (this.#ctx.isClosed()) throw this.#shutdownCapacityError();
      if (this.total() < limit) return this.#ctx.slots.reserve();
      const evicted = await this.#evictOne();
      if (evicted !== undefined) {
        if (this.#ctx.isClosed()) {
          throw this.#shutdownCapacityError('Sandbox provider shut down while acquiring capacity');
        }
        if (this.total() < limit) return this.#ctx.slots.reserve();
      }
      if (policy === 'reject') {
        throw this.capacityError(
          `All ${limit} sandbox capacity slots are in use and overflow_policy is 'reject'`,
          'capacity',
        );
      }
      if (policy === 'burst') {
        throw this.capacityError(
          `All ${limit} sandbox capacity slots are in use (replicas=${this.#ctx.settings.replicas}, burst=${this.#ctx.settings.burstLimit})`,
          'capacity',
        );
      }
      const remaining = deadline - this.#ctx.clock.now();
      if (remaining <= 0) {
        throw this.capacityError(
          `Timed out after ${this.#ctx.settings.acquireTimeoutSeconds}s waiting for a sandbox capacity slot (limit ${limit})`,
          'capacity',
        );
      }
      await this.#waitForSlot(Math.min(remaining, 1000));
    }
  }

  /** A local slot plus, with a ledger, a deployment-wide reservation for one create. */
  async reserveCapacity(stores: Stores): Promise<{ slot: Slot; token: string | undefined }> {
    const deadline = this.deadline();
    const ledger = stores.capacity;
    const token = ledger === undefined ? undefined : randomUUID().replace(/-/g, '');
    for (;;) {
      const slot = await this.reserveLocal(deadline);
      if (ledger === undefined || token === undefined) return { slot, token };
      let outcome: CapacityReserveOutcome;
      try {
        outcome = await ledger.reserve(token);
      } catch (error) {
        slot.release();
        throw this.capacityError(
          'Deployment-wide E2B capacity is unavailable',
          'capacity_backend',
          {
            cause: error,
          },
        );
      }
      if (outcome === CapacityReserveOutcome.GRANTED) return { slot, token };
      slot.release();
      if (outcome === CapacityReserveOutcome.FULL && (await this.#evictOne()) !== undefined)
        continue;
      if (this.#ctx.settings.overflowPolicy !== 'wait') {
        throw outcome === CapacityReserveOutcome.NOT_READY
          ? this.capacityError(
              'Deployment-wide E2B capacity is initializing',
              'capacity_initializing',
            )
          : this.capacityError('Deployment-wide E2B capacity is full', 'capacity');
      }
      const remaining = deadline - this.#ctx.clock.now();
      if (remaining <= 0) {
        throw this.capacityError(
          `Timed out after ${this.#ctx.settings.acquireTimeoutSeconds}s waiting for deployment-wide E2B capacity`,
          'capacity',
        );
      }
      // A shutdown meanwhile is seen by `reserveLocal`, first thing in the next round.
      await this.#waitForSlot(Math.min(remaining, 1000));
    }
  }

  /** Frees one slot: retries a tombstone first, else evicts the oldest warm VM. */
  async #evictOne(): Promise<string | undefined> {
    for (const [id, tomb] of this.#ctx.slots.tombstones) {
      if (tomb.retrying) continue;
      tomb.retrying = true;
      try {
        if (await this.#retryTombstone(id)) {
          this.#ctx.slots.clearTombstone(id);
          return id;
        }
      } finally {
        tomb.retrying = false;
      }
      return undefined;
    }
    return this.#ctx.book.pool.evictOldest();
  }

  async #retryTombstone(id: string): Promise<boolean> {
    if (!(await (await this.#own()).claim(id, { forDestroy: true }))) return true;
    return (await this.#own()).heldTeardown(id, async () => {
      const kill = await this.#teardown.killById(id);
      if (kill.outcome === 'failed') {
        this.#ctx.logger.warn('Tombstone kill failed; keeping its slot', {
          sandboxId: id,
          error: errorMessage(kill.error),
        });
      }
      return kill.outcome === 'killed' || kill.outcome === 'gone';
    });
  }
}
