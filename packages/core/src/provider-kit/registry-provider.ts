import type { Clock } from '../async/clock.js';
import { systemClock } from '../async/clock.js';
import type { Sandbox } from '../contract/sandbox.js';
import { SandboxProvider } from '../contract/sandbox-provider.js';
import { ProviderClosedError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import { SandboxProviderEventEmitter } from '../contract/provider-events.js';
import type {
  AcquirePath,
  SandboxProviderEventListener,
  SandboxProviderEvents,
} from '../contract/provider-events.js';
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
 * lives here once: the registry and its warm pool, the per-id acquire locks, the accessors, the
 * acquire-path events, `reset()` and the idempotent `shutdown()`.
 *
 * `reset()` follows the one contract of `docs/architecture.md`: stop background work, release what
 * this instance holds, refuse further use. A provider whose sandboxes a replacement finds again
 * (`handsOverOnReset`: BoxLite, by box name) leaves them running, adapters closed, for the
 * replacement's start-up reconciliation to adopt; one whose sandboxes nothing could ever find again
 * (Tenki, OpenSandbox) stops them, as `shutdown()` does, since they would otherwise run unowned
 * until their own timeout.
 *
 * A subclass supplies `sandboxOf` (its active entry's sandbox), the warm-pool destroy hook,
 * `handOver` (give a sandbox up without stopping it) and `teardownAll` for shutdown.
 */
export abstract class RegistrySandboxProvider<TActive, TWarm>
  extends SandboxProvider
  implements SandboxProviderEvents
{
  protected readonly registry: WarmPoolRegistry<TActive, TWarm>;
  protected readonly locks: ResettableAcquireSerializer;
  protected readonly logger: Logger;
  protected readonly clock: Clock;
  /** Acquire paths and adoptions, for instrumentation (`instrumentProvider`) and the host. */
  protected readonly events: SandboxProviderEventEmitter;
  readonly #closedMessage: string;
  #closed = false;
  #retired = false;
  #shutdown: Promise<void> | undefined;

  protected constructor(options: RegistryProviderOptions) {
    super();
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.#closedMessage = options.closedMessage;
    this.events = new SandboxProviderEventEmitter({ logger: this.logger });
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

  /** Whether a replacement provider finds this one's sandboxes again (see `reset()`). */
  protected abstract readonly handsOverOnReset: boolean;

  /** `reset()` of a hand-over provider: gives one sandbox up without stopping it. */
  protected abstract handOver(id: string, sandbox: Sandbox): Promise<void>;

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

  onEvent(listener: SandboxProviderEventListener): () => void {
    return this.events.onEvent(listener);
  }

  /** Reports the path an acquire took and returns the id (call it as the acquire resolves). */
  protected acquired(sandboxId: string, path: AcquirePath): string {
    this.events.emit({ type: 'acquire', sandboxId, path });
    return sandboxId;
  }

  /** A pure in-memory lookup. */
  override get(sandboxId: string): Sandbox | undefined {
    const active = this.registry.active.get(sandboxId);
    return active === undefined ? undefined : this.sandboxOf(active);
  }

  /** Shut down or reset: every acquire and lock is refused from now on. */
  protected get closed(): boolean {
    return this.#closed || this.#retired;
  }

  protected assertOpen(): void {
    if (this.closed) throw new ProviderClosedError(this.#closedMessage);
  }

  override async reset(): Promise<void> {
    if (!this.handsOverOnReset) {
      await this.shutdown();
      return;
    }
    if (this.#retired || this.#closed) return;
    this.#retired = true;
    // Queued acquires are refused, not moved to a fresh table: the instance is done.
    this.locks.close();
    await this.registry.pool.stop();
    for (const [id, active] of [...this.registry.active]) {
      this.registry.active.delete(id);
      await this.handOver(id, this.sandboxOf(active));
    }
    for (const entry of this.registry.pool.entries()) {
      if (!this.registry.pool.forget(entry.id, entry)) continue;
      await this.handOverWarm(entry);
    }
  }

  /** `reset()` of a hand-over provider: gives one warm sandbox up without stopping it. */
  protected abstract handOverWarm(entry: WarmEntry<TWarm>): Promise<void>;

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
