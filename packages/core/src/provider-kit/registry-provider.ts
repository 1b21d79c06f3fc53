import type { Clock } from '../async/clock.js';
import { systemClock } from '../async/clock.js';
import type { Sandbox } from '../contract/sandbox.js';
import { SandboxProvider } from '../contract/sandbox-provider.js';
import { ProviderClosedError } from '../errors/errors.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import { ResettableAcquireSerializer } from '../serializer/resettable-acquire-serializer.js';
import type { WarmEntry, WarmPoolDestroyReason } from '../warm-pool/warm-pool.js';
import { WarmPoolRegistry } from '../warm-pool/warm-pool-registry.js';
import type { WarmPoolSettings } from '../warm-pool/warm-pool-registry.js';

export interface RegistryProviderOptions {
  /** Names the provider in lock and pool log lines (`BoxliteProvider`). */
  readonly name: string;
  /** The name of the warm pool in log lines; default `name`. */
  readonly poolName?: string | undefined;
  readonly settings: WarmPoolSettings;
  /** The message of the `ProviderClosedError` a closed instance raises. */
  readonly closedMessage: string;
  readonly clock?: Clock | undefined;
  readonly logger?: Logger | undefined;
  /** `false` arms no timers (an inspecting process); see `WarmPoolRegistryOptions.background`. */
  readonly background?: boolean | undefined;
}

/**
 * The base of a registry-style provider (BoxLite, Tenki, OpenSandbox): one sandbox per id, active
 * or warm, in one process, with no ownership store. What every such provider had written itself
 * lives here once: the registry and its warm pool, the resettable per-id acquire locks, the
 * accessors, the idempotent `shutdown()` and the park-on-`reset()` loop.
 *
 * `reset()` (the `park` reset mode of `docs/architecture.md`): a fresh acquire lock table (no
 * caller stays queued on the old one), and every active sandbox parked in the warm pool, still
 * running, for its thread to reclaim after a health check or for the idle checker to stop; one the
 * pool refuses, or one `parkOnReset` declines, is stopped. The instance stays usable.
 *
 * A subclass supplies `sandboxOf` (its active entry's sandbox), the warm-pool destroy hook, the
 * park decision and the stop, and `teardownAll` for shutdown.
 */
export abstract class RegistrySandboxProvider<TActive, TWarm> extends SandboxProvider {
  protected readonly registry: WarmPoolRegistry<TActive, TWarm>;
  protected readonly locks: ResettableAcquireSerializer;
  protected readonly logger: Logger;
  protected readonly clock: Clock;
  readonly #closedMessage: string;
  #closed = false;
  #shutdown: Promise<void> | undefined;

  protected constructor(options: RegistryProviderOptions) {
    super();
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.#closedMessage = options.closedMessage;
    this.locks = new ResettableAcquireSerializer({
      name: `${options.name}-acquire`,
      logger: this.logger,
      closedError: (cause) => new ProviderClosedError(options.closedMessage, { cause }),
    });
    this.registry = new WarmPoolRegistry<TActive, TWarm>({
      name: options.poolName ?? options.name,
      settings: options.settings,
      clock: this.clock,
      logger: this.logger,
      destroy: (entry, reason) => this.destroyWarm(entry, reason),
      background: options.background,
    });
  }

  /** The sandbox of an active entry. */
  protected abstract sandboxOf(active: TActive): Sandbox;

  /** The warm pool's destroy hook: stops a warm sandbox (a rejection keeps the entry). */
  protected abstract destroyWarm(
    entry: WarmEntry<TWarm>,
    reason: WarmPoolDestroyReason,
  ): Promise<boolean | void>;

  /** The warm value to park an active entry as on `reset()`, or undefined to stop it instead. */
  protected abstract parkOnReset(id: string, active: TActive): TWarm | undefined;

  /** Stops a sandbox this instance gives up (failures logged, never thrown). */
  protected abstract stopQuietly(id: string, active: TActive, reason: string): Promise<void>;

  /** Shutdown's work after the locks closed: stop every warm and active sandbox, close clients. */
  protected abstract teardownAll(): Promise<void>;

  /** Ids of active (acquired, not released) sandboxes. */
  get activeIds(): string[] {
    return this.registry.activeIds;
  }

  /** Ids of warm (released, still running) sandboxes, oldest first. */
  get warmIds(): string[] {
    return this.registry.warmIds;
  }

  /** Whether the idle checker runs (only when `idle_timeout > 0`, until shutdown). */
  get idleCheckerRunning(): boolean {
    return this.registry.idleCheckerRunning;
  }

  /** `(replicas, active + warm)`. */
  replicaCount(): { replicas: number; total: number } {
    return this.registry.replicaCount();
  }

  /** One idle pass now (what the idle checker runs every `warm_pool.idle_check_interval_seconds`). */
  runIdleCheck(): Promise<void> {
    return this.registry.runIdleCheck();
  }

  /** A pure in-memory lookup. */
  override get(sandboxId: string): Sandbox | undefined {
    const active = this.registry.active.get(sandboxId);
    return active === undefined ? undefined : this.sandboxOf(active);
  }

  /** Shut down: every acquire and lock is refused from now on. */
  protected get closed(): boolean {
    return this.#closed;
  }

  protected assertOpen(): void {
    if (this.#closed) throw new ProviderClosedError(this.#closedMessage);
  }

  override async reset(): Promise<void> {
    this.locks.reset();
    for (const [id, active] of [...this.registry.active]) {
      this.registry.active.delete(id);
      const warm = this.parkOnReset(id, active);
      if (warm === undefined || this.registry.pool.put(id, warm) === undefined) {
        await this.stopQuietly(id, active, 'reset');
      }
    }
  }

  /** Stops the idle checker and every sandbox, then closes clients. Idempotent. */
  override shutdown(): Promise<void> {
    this.#shutdown ??= this.#shutdownNow();
    return this.#shutdown;
  }

  async #shutdownNow(): Promise<void> {
    this.#closed = true;
    this.locks.close();
    await this.teardownAll();
  }
}
