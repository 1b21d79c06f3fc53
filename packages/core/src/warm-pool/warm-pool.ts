import type { Clock, ClockTimer } from '../async/clock.js';
import { systemClock } from '../async/clock.js';
import { InvalidArgumentError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';

/** Released sandboxes stay warm this long before the idle checker destroys them. */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 600;
/** Pause between two idle-checker passes. */
export const DEFAULT_IDLE_CHECK_INTERVAL_SECONDS = 60;
/** Soft cap on active + warm sandboxes per process. */
export const DEFAULT_REPLICAS = 3;

export type WarmPoolDestroyReason = 'idle_timeout' | 'replica_enforcement' | 'shutdown';

/** A parked sandbox. Entries are compared by object identity: a re-park is a new entry. */
export interface WarmEntry<T> {
  readonly id: string;
  readonly value: T;
  /** `clock.now()` when it was parked. */
  readonly releasedAt: number;
}

export interface WarmPoolOptions<T> {
  /**
   * Destroys a warm sandbox. Resolve `true` (or nothing) once it is gone; resolve `false` to say
   * "not destroyed, keep it" (e.g. a peer owns it); a rejection is logged and also keeps it. The
   * entry stays in the pool, reserved, until this succeeds, so a failed teardown is retried on a
   * later pass instead of leaking a running sandbox nobody tracks.
   */
  destroy: (entry: WarmEntry<T>, reason: WarmPoolDestroyReason) => Promise<boolean | void>;
  /** Seconds; `0` keeps warm sandboxes until shutdown. Default 600. */
  idleTimeoutSeconds?: number;
  /** Seconds between idle-checker passes. Default 60. */
  checkIntervalSeconds?: number;
  /** Default 3. */
  replicas?: number;
  /**
   * Provider veto, evaluated at the instant of reservation (not earlier: checking first and
   * reserving later is the very window a reservation exists to close).
   */
  stillReapable?: (entry: WarmEntry<T>, reason: WarmPoolDestroyReason) => boolean;
  /** Extra work for each idle pass (e.g. active-idle cleanup, reconciliation); errors are logged. */
  onIdleCheck?: () => Promise<void>;
  clock?: Clock;
  logger?: Logger;
  /** Names the pool in log lines (e.g. the provider). */
  name?: string;
}

/** Exclusive right to tear one id down; see `WarmPool.reserve`. */
export interface TeardownReservation {
  readonly id: string;
  /** Idempotent. */
  release(): void;
}

export interface WarmPoolCapacityResult {
  replicas: number;
  /** Warm ids destroyed to make room, oldest first. */
  evicted: string[];
  /** True when active + warm still reach `replicas` (creation proceeds beyond the soft cap). */
  overSoftCap: boolean;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(`WarmPool ${name} must be a non-negative number, got ${value}`);
  }
  return value;
}

/**
 * Released sandboxes kept alive for fast reuse, shared by the warm-pool providers by composition:
 * the provider owns its active registry, creation, health checks and the destroy hook; the pool
 * owns parking, reclaim, idle expiry, oldest-first eviction, replica counting and the idle timer.
 *
 * Teardown is reservation-based. A reaper reserves an id (refused if reserved already, if the
 * entry changed, or if the provider's `stillReapable` says no), destroys it, and removes the entry
 * only after the destroy succeeded and only if it is still the same entry. While reserved,
 * `take` refuses the id, so a reclaim can never hand out a sandbox whose stop is in flight, and a
 * failed stop never loses track of a running sandbox.
 */
export class WarmPool<T> {
  readonly idleTimeoutSeconds: number;
  readonly checkIntervalSeconds: number;
  readonly replicas: number;
  readonly #options: WarmPoolOptions<T>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #entries = new Map<string, WarmEntry<T>>();
  readonly #reserved = new Set<string>();
  #timer: ClockTimer | undefined;
  #running = false;
  #tick: Promise<void> | undefined;

  constructor(options: WarmPoolOptions<T>) {
    this.#options = options;
    this.idleTimeoutSeconds = nonNegative(
      'idleTimeoutSeconds',
      options.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS,
    );
    this.checkIntervalSeconds = nonNegative(
      'checkIntervalSeconds',
      options.checkIntervalSeconds ?? DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
    );
    const replicas = options.replicas ?? DEFAULT_REPLICAS;
    if (!Number.isInteger(replicas) || replicas < 0) {
      throw new InvalidArgumentError(
        `WarmPool replicas must be a non-negative integer, got ${replicas}`,
      );
    }
    this.replicas = replicas;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
  }

  get size(): number {
    return this.#entries.size;
  }

  has(id: string): boolean {
    return this.#entries.has(id);
  }

  get(id: string): WarmEntry<T> | undefined {
    return this.#entries.get(id);
  }

  /** Entries oldest first. */
  entries(): WarmEntry<T>[] {
    return [...this.#entries.values()].sort((a, b) => a.releasedAt - b.releasedAt);
  }

  ids(): string[] {
    return this.entries().map((e) => e.id);
  }

  /** Whether `id` is reserved for teardown (promote paths must treat it as gone). */
  isReserved(id: string): boolean {
    return this.#reserved.has(id);
  }

  /**
   * Parks `value` as `id` with a fresh timestamp, replacing any previous entry. Refused
   * (`undefined`) while `id` is reserved for teardown: the caller must not keep using a sandbox
   * whose stop is in flight.
   */
  put(id: string, value: T): WarmEntry<T> | undefined {
    if (this.#reserved.has(id)) return undefined;
    const entry: WarmEntry<T> = { id, value, releasedAt: this.#clock.now() };
    this.#entries.set(id, entry);
    return entry;
  }

  /**
   * Reclaims `id`: removes and returns its entry. Refused (`undefined`) when absent, reserved for
   * teardown, or (with `expected`) replaced since the caller looked.
   */
  take(id: string, expected?: WarmEntry<T>): WarmEntry<T> | undefined {
    if (this.#reserved.has(id)) return undefined;
    const entry = this.#entries.get(id);
    if (entry === undefined || (expected !== undefined && entry !== expected)) return undefined;
    this.#entries.delete(id);
    return entry;
  }

  /**
   * Drops `id` without destroying it (e.g. its ownership moved to a peer). Refused while reserved:
   * a teardown in flight keeps its entry until the stop outcome is known.
   */
  forget(id: string, expected?: WarmEntry<T>): boolean {
    if (this.#reserved.has(id)) return false;
    const entry = this.#entries.get(id);
    if (entry === undefined || (expected !== undefined && entry !== expected)) return false;
    this.#entries.delete(id);
    return true;
  }

  /**
   * Reserves `id` for teardown in one step with the check `stillReapable` (evaluated now, not
   * before). Works for any id, pooled or not, so providers can guard active teardowns the same
   * way. Refused (`undefined`) if already reserved or the predicate says no.
   */
  reserve(id: string, stillReapable: () => boolean = () => true): TeardownReservation | undefined {
    if (this.#reserved.has(id) || !stillReapable()) return undefined;
    this.#reserved.add(id);
    let released = false;
    return {
      id,
      release: () => {
        if (released) return;
        released = true;
        this.#reserved.delete(id);
      },
    };
  }

  /** `(replicas, active + warm)`. */
  replicaCount(activeCount: number): { replicas: number; total: number } {
    return { replicas: this.replicas, total: activeCount + this.#entries.size };
  }

  /**
   * Destroys one warm entry under a reservation; true iff it was destroyed and removed. Refused
   * when the entry is no longer the pooled one, is reserved, or the provider vetoes it.
   */
  async destroyEntry(entry: WarmEntry<T>, reason: WarmPoolDestroyReason): Promise<boolean> {
    const reservation = this.reserve(
      entry.id,
      () =>
        this.#entries.get(entry.id) === entry &&
        (this.#options.stillReapable?.(entry, reason) ?? true),
    );
    if (reservation === undefined) return false;
    try {
      let destroyed: boolean | void;
      try {
        destroyed = await this.#options.destroy(entry, reason);
      } catch (error) {
        this.#logger.error('Failed to destroy warm sandbox; keeping it for a later pass', {
          pool: this.#options.name,
          sandboxId: entry.id,
          reason,
          error,
        });
        return false;
      }
      if (destroyed === false) {
        this.#logger.info('Warm sandbox was not destroyed; keeping it', {
          pool: this.#options.name,
          sandboxId: entry.id,
          reason,
        });
        return false;
      }
      // Removed inside the reservation, after the stop: no moment where a stopped sandbox is in
      // the pool unreserved. The reservation also kept put/take/forget off the id, so the entry
      // is still the one destroyed.
      this.#entries.delete(entry.id);
      return true;
    } finally {
      reservation.release();
    }
  }

  /** Destroys the oldest warm entry that can be destroyed; its id, or undefined. */
  async evictOldest(): Promise<string | undefined> {
    for (const entry of this.entries()) {
      if (await this.destroyEntry(entry, 'replica_enforcement')) return entry.id;
    }
    return undefined;
  }

  /**
   * Destroys every entry parked longer than `idleTimeoutSeconds` (default: the pool's). A timeout
   * of 0 disables expiry. Returns the ids destroyed.
   */
  async reapExpired(idleTimeoutSeconds: number = this.idleTimeoutSeconds): Promise<string[]> {
    if (!(idleTimeoutSeconds > 0)) return [];
    const now = this.#clock.now();
    const limitMs = idleTimeoutSeconds * 1000;
    const destroyed: string[] = [];
    for (const entry of this.entries()) {
      if (now - entry.releasedAt <= limitMs) continue;
      if (await this.destroyEntry(entry, 'idle_timeout')) destroyed.push(entry.id);
    }
    return destroyed;
  }

  /**
   * Makes room before creating `newId` while `activeCount` sandboxes are active: evicts warm
   * entries, oldest first, while active + warm would reach the cap. Active sandboxes are never
   * evicted; if only they fill the cap, creation goes ahead beyond the soft limit with a warning.
   */
  async ensureCapacity(activeCount: number, newId?: string): Promise<WarmPoolCapacityResult> {
    const evicted: string[] = [];
    while (activeCount + this.#entries.size >= this.replicas) {
      const id = await this.evictOldest();
      if (id === undefined) break;
      evicted.push(id);
    }
    const overSoftCap = activeCount + this.#entries.size >= this.replicas;
    const fields = { pool: this.#options.name, sandboxId: newId, replicas: this.replicas };
    if (evicted.length > 0) {
      this.#logger.info(
        `Evicted warm sandbox ${evicted.join(', ')} to stay within ${this.replicas} replicas`,
        { ...fields, evicted },
      );
    }
    if (overSoftCap) {
      this.#logger.warn(
        `All ${this.replicas} replica slots are in active use; creating sandbox ${newId ?? '(new)'} beyond the soft limit`,
        { ...fields, active: activeCount, warm: this.#entries.size },
      );
    }
    return { replicas: this.replicas, evicted, overSoftCap };
  }

  /**
   * One idle pass: the provider's `onIdleCheck`, then warm expiry. Errors are logged. Concurrent
   * calls share the pass in flight.
   */
  runIdleCheck(): Promise<void> {
    this.#tick ??= this.#idlePass().finally(() => {
      this.#tick = undefined;
    });
    return this.#tick;
  }

  /** Whether the idle checker is started. */
  get idleCheckerRunning(): boolean {
    return this.#running;
  }

  /**
   * Starts the idle checker: a pass every `checkIntervalSeconds`, each scheduled after the
   * previous one finished (passes never overlap), on an unref'd timer. No-op if started.
   */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  /** Stops the idle checker and waits for a pass in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer !== undefined) {
      this.#clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    await this.#tick;
  }

  /**
   * Stops the idle checker and destroys every entry (reason `shutdown`). Entries whose destroy is
   * refused or fails stay in the pool. Returns the ids destroyed.
   */
  async destroyAll(): Promise<string[]> {
    await this.stop();
    const destroyed: string[] = [];
    for (const entry of this.entries()) {
      if (await this.destroyEntry(entry, 'shutdown')) destroyed.push(entry.id);
    }
    return destroyed;
  }

  #schedule(): void {
    if (!this.#running) return;
    this.#timer = this.#clock.setTimeout(async () => {
      // stop() clears this timer, so it only fires while running.
      this.#timer = undefined;
      await this.runIdleCheck();
      this.#schedule();
    }, this.checkIntervalSeconds * 1000);
  }

  async #idlePass(): Promise<void> {
    if (this.#options.onIdleCheck !== undefined) {
      try {
        await this.#options.onIdleCheck();
      } catch (error) {
        this.#logger.error('Warm pool idle check failed', { pool: this.#options.name, error });
      }
    }
    try {
      await this.reapExpired();
    } catch (error) {
      this.#logger.error('Warm pool expiry pass failed', { pool: this.#options.name, error });
    }
  }
}
