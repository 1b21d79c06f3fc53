import type { Clock } from '../async/clock.js';
import { systemClock } from '../async/clock.js';
import type { WarmPool } from '../warm-pool/warm-pool.js';

/**
 * Where one sandbox id stands in this instance. Exactly one state per id, derived from one place,
 * so "tracked", "active and warm are exclusive" and "being torn down" mean the same thing on every
 * path of every provider.
 *
 * - `creating`: inside a create here, before it is registered (listed by the backend, untracked);
 * - `active`: handed out to a turn;
 * - `warm`: parked between turns;
 * - `tearing-down`: a teardown reservation is held (wins over `active` / `warm`: every promote
 *   path treats a reserved id as gone);
 * - a provider's own states (`adopting`, `tombstone`, ...) through `extraState`;
 * - `untracked`: none of these.
 */
export type SandboxBookState =
  'creating' | 'active' | 'warm' | 'tearing-down' | 'adopting' | 'tombstone' | 'untracked';

export interface SandboxBookOptions<W> {
  /** The warm pool holds the warm entries and the teardown reservations. */
  readonly pool: WarmPool<W>;
  readonly clock?: Clock | undefined;
  /** States the provider keeps itself (asked for ids that are otherwise untracked). */
  readonly extraState?: ((id: string) => 'adopting' | 'tombstone' | undefined) | undefined;
}

/**
 * The per-id sandbox book of a provider: active entries with their thread mapping and last
 * activity, the creates in flight, and (through the warm pool) the warm entries and teardown
 * reservations. All of it is synchronous: a provider's critical section is a stretch of code
 * without an await, and every check-then-act on the book must sit inside one.
 *
 * `A` is the provider's active entry (client, info, identity); `W` its warm value.
 */
export class SandboxBook<A, W> {
  readonly pool: WarmPool<W>;
  readonly #clock: Clock;
  readonly #extraState: ((id: string) => 'adopting' | 'tombstone' | undefined) | undefined;
  readonly #active = new Map<string, A>();
  /** Thread key → active id. */
  readonly #threads = new Map<string, string>();
  readonly #lastActivity = new Map<string, number>();
  readonly #creating = new Map<string, number>();

  constructor(options: SandboxBookOptions<W>) {
    this.pool = options.pool;
    this.#clock = options.clock ?? systemClock;
    this.#extraState = options.extraState;
  }

  stateOf(id: string): SandboxBookState {
    if (this.pool.isReserved(id)) return 'tearing-down';
    if (this.#active.has(id)) return 'active';
    if (this.pool.has(id)) return 'warm';
    if (this.#creating.has(id)) return 'creating';
    return this.#extraState?.(id) ?? 'untracked';
  }

  /** Active or warm here: the sandbox is this instance's to reuse, renew and reap. */
  isTracked(id: string): boolean {
    return this.#active.has(id) || this.pool.has(id);
  }

  isTearingDown(id: string): boolean {
    return this.pool.isReserved(id);
  }

  // active entries

  active(id: string): A | undefined {
    return this.#active.get(id);
  }

  isActive(id: string): boolean {
    return this.#active.has(id);
  }

  activeIds(): string[] {
    return [...this.#active.keys()];
  }

  activeEntries(): [string, A][] {
    return [...this.#active];
  }

  get activeCount(): number {
    return this.#active.size;
  }

  /** Active and warm ids, each once: renewal's working set. */
  trackedIds(): string[] {
    return [...new Set([...this.#active.keys(), ...this.pool.ids()])];
  }

  /**
   * Makes `id` active for `threadKey`. Active and warm are exclusive, so a warm entry of the id
   * is dropped in the same synchronous step. Returns the entry it replaced, if any (the caller
   * closes its client).
   */
  install(id: string, entry: A, threadKey: string | undefined): A | undefined {
    if (this.pool.has(id)) this.pool.forget(id);
    const previous = this.#active.get(id);
    this.#active.set(id, entry);
    if (threadKey !== undefined) this.#threads.set(threadKey, id);
    this.#lastActivity.set(id, this.#clock.now());
    return previous;
  }

  /**
   * Removes the active entry of `id` with its thread mappings and activity; the warm entry, if
   * any, is left to the caller. Returns the removed entry.
   */
  untrackActive(id: string, expected?: A): A | undefined {
    const entry = this.#active.get(id);
    if (entry === undefined || (expected !== undefined && entry !== expected)) return undefined;
    this.#active.delete(id);
    this.#lastActivity.delete(id);
    for (const [key, mapped] of this.#threads) if (mapped === id) this.#threads.delete(key);
    return entry;
  }

  // thread mapping

  threadSandbox(threadKey: string): string | undefined {
    return this.#threads.get(threadKey);
  }

  hasThread(threadKey: string): boolean {
    return this.#threads.has(threadKey);
  }

  /** Drops the mapping only if it still points at `id` (a newer mapping is left alone). */
  unmapThread(threadKey: string, id?: string): void {
    if (id === undefined || this.#threads.get(threadKey) === id) this.#threads.delete(threadKey);
  }

  threadMap(): Record<string, string> {
    return Object.fromEntries(this.#threads);
  }

  // activity

  touch(id: string): void {
    if (this.#active.has(id)) this.#lastActivity.set(id, this.#clock.now());
  }

  lastActivity(id: string): number | undefined {
    return this.#lastActivity.get(id);
  }

  /** Active ids unused for longer than `timeoutMs`. */
  idleIds(timeoutMs: number): string[] {
    const now = this.#clock.now();
    return [...this.#lastActivity].filter(([, at]) => now - at > timeoutMs).map(([id]) => id);
  }

  // creates in flight

  /** Marks a create in flight (counted: two creates of one id cannot clear each other's mark). */
  beginCreating(id: string): () => void {
    this.#creating.set(id, (this.#creating.get(id) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.#creating.get(id) ?? 1) - 1;
      if (left > 0) this.#creating.set(id, left);
      else this.#creating.delete(id);
    };
  }

  isCreating(id: string): boolean {
    return this.#creating.has(id);
  }

  /** Forgets every active entry and mapping (shutdown, after the teardowns). */
  clearActive(): void {
    this.#active.clear();
    this.#threads.clear();
    this.#lastActivity.clear();
  }
}
