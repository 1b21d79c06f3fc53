import type { Clock } from '../async/clock.js';
import type { Logger } from '../logging/logger.js';
import { WarmPool } from './warm-pool.js';
import type { WarmPoolOptions } from './warm-pool.js';

/** The warm-pool keys of a provider's resolved settings. */
export interface WarmPoolSettings {
  /** `0` keeps warm sandboxes until shutdown (no idle checker runs). */
  readonly idleTimeoutSeconds: number;
  readonly idleCheckIntervalSeconds: number;
  readonly replicas: number;
}

export interface WarmPoolRegistryOptions<TWarm> {
  /** Names the pool in log lines. */
  readonly name: string;
  readonly settings: WarmPoolSettings;
  /** The pool's destroy hook (see `WarmPoolOptions.destroy`). */
  readonly destroy: WarmPoolOptions<TWarm>['destroy'];
  readonly clock?: Clock;
  readonly logger?: Logger;
  /**
   * `false` never starts the idle checker: a provider built for inspection (`sbx ls`, core's
   * `SandboxProviderInit.background`) parks nothing and must arm no timers. Default `true`.
   */
  readonly background?: boolean | undefined;
}

/**
 * The sandboxes of a provider that keeps one per id, active or warm: the active registry, the
 * `WarmPool` of released ones (its idle checker started only when there is something to expire),
 * and the ids being created right now. The replica cap spans all three, which is why they live
 * together: a creation in flight holds a slot before its sandbox is registered, so concurrent
 * creations cannot all see room for themselves.
 *
 * Who may be handed out, parked or destroyed stays the provider's decision; this only keeps the
 * books those decisions are made on.
 */
export class WarmPoolRegistry<TActive, TWarm> {
  readonly active = new Map<string, TActive>();
  readonly pool: WarmPool<TWarm>;
  readonly #creating = new Set<string>();

  constructor(options: WarmPoolRegistryOptions<TWarm>) {
    const { settings } = options;
    this.pool = new WarmPool<TWarm>({
      name: options.name,
      idleTimeoutSeconds: settings.idleTimeoutSeconds,
      checkIntervalSeconds: settings.idleCheckIntervalSeconds,
      replicas: settings.replicas,
      clock: options.clock,
      logger: options.logger,
      destroy: options.destroy,
    });
    if (settings.idleTimeoutSeconds > 0 && options.background !== false) this.pool.start();
  }

  /** Ids of active (acquired, not released) sandboxes. */
  get activeIds(): string[] {
    return [...this.active.keys()];
  }

  /** Ids of warm (released, still running) sandboxes, oldest first. */
  get warmIds(): string[] {
    return this.pool.ids();
  }

  /**
   * Whether the idle checker runs (only when `idleTimeoutSeconds > 0` and background work is
   * allowed, until the pool stops).
   */
  get idleCheckerRunning(): boolean {
    return this.pool.idleCheckerRunning;
  }

  /** `(replicas, active + warm)`. */
  replicaCount(): { replicas: number; total: number } {
    return this.pool.replicaCount(this.active.size);
  }

  /** One idle pass now. */
  runIdleCheck(): Promise<void> {
    return this.pool.runIdleCheck();
  }

  /**
   * Runs `create` for `id` holding a creation slot: the id counts as active from the start (for
   * this and every other creation's room-making) until `create` settles, and warm sandboxes are
   * evicted, oldest first, to make room for it before `create` starts.
   */
  async withCreationSlot<T>(id: string, create: () => Promise<T>): Promise<T> {
    this.#creating.add(id);
    try {
      // The id itself is in `#creating`: the room needed is for it, on top of everyone else.
      await this.pool.ensureCapacity(this.active.size + this.#creating.size - 1, id);
      return await create();
    } finally {
      this.#creating.delete(id);
    }
  }
}
