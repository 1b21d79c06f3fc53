import { InvalidArgumentError, OwnershipBackendError } from '../errors/errors.js';
import {
  LeaseValue,
  RenewOutcome,
  assertLeaseOwnerId,
  assertLeaseSandboxId,
  createOwnerId,
  leaseTtlMilliseconds,
  leaseTtlSeconds,
} from './ownership-store.js';
import type { Clock } from '../async/clock.js';
import type { ClaimOptions, LeaseHolder, LeaseState, OwnershipStore } from './ownership-store.js';

/** Only `now()` (milliseconds) is used; tests inject a `ManualClock`. */
type LeaseClock = Pick<Clock, 'now'>;

// Lease expiry must not jump with wall-clock adjustments, so the default is monotonic.
const monotonicClock: LeaseClock = { now: () => performance.now() };

interface LeaseEntry {
  state: LeaseState;
  ownerId: string;
  expiresAt: number;
}

/**
 * The lease map behind one or more `MemoryOwnershipStore`s. A store normally owns its table; tests
 * that need "two instances, one backend" in one process hand the same table to several stores. The
 * clock belongs to the table because expiry is a property of the shared state (as it is of a Redis
 * server), not of whichever store happens to look.
 */
export class MemoryLeaseTable {
  readonly clock: Pick<Clock, 'now'>;
  private readonly entries = new Map<string, LeaseEntry>();

  constructor(options: { clock?: Pick<Clock, 'now'> } = {}) {
    this.clock = options.clock ?? monotonicClock;
  }

  /** The live entry, deleting it first if it has expired (`now >= expiresAt` counts as expired). */
  get(sandboxId: string): LeaseEntry | undefined {
    const entry = this.entries.get(sandboxId);
    if (entry && this.clock.now() >= entry.expiresAt) {
      this.entries.delete(sandboxId);
      return undefined;
    }
    return entry;
  }

  set(sandboxId: string, state: LeaseState, ownerId: string, ttlMs: number): void {
    this.entries.set(sandboxId, { state, ownerId, expiresAt: this.clock.now() + ttlMs });
  }

  delete(sandboxId: string): void {
    this.entries.delete(sandboxId);
  }

  /** Milliseconds until the lease lapses, `undefined` when absent. For diagnostics and tests. */
  remainingMs(sandboxId: string): number | undefined {
    const entry = this.get(sandboxId);
    return entry === undefined ? undefined : entry.expiresAt - this.clock.now();
  }

  /** Make one lease lapse now, as if its TTL had run out (tests simulating a dead owner). */
  expire(sandboxId: string): void {
    const entry = this.entries.get(sandboxId);
    if (entry) entry.expiresAt = this.clock.now();
  }

  /** Number of live leases. */
  get size(): number {
    for (const id of [...this.entries.keys()]) this.get(id);
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }
}

export interface MemoryOwnershipStoreOptions {
  /** Defaults to `createOwnerId()`. */
  ownerId?: string;
  /** Lease TTL in seconds. Defaults to `leaseTtlSeconds()` (30 s × 4 = 120 s). */
  ttlSeconds?: number;
  /** Share one table between stores to model several instances on one backend. */
  table?: MemoryLeaseTable;
  /** Clock for the store's own table; pass it to the `MemoryLeaseTable` when sharing one. */
  clock?: Pick<Clock, 'now'>;
}

/**
 * Process-local `OwnershipStore`. Single-instance only (`supportsCrossProcess = false`): a gateway
 * running several workers on this store has no cross-process coordination at all.
 *
 * Atomicity comes from the event loop: every method does its read-modify-write synchronously before
 * its first (and only) await point, so no other store call can interleave inside it.
 */
export class MemoryOwnershipStore implements OwnershipStore {
  readonly ownerId: string;
  readonly supportsCrossProcess = false;
  readonly ttlSeconds: number;
  readonly table: MemoryLeaseTable;
  private readonly ttlMs: number;
  private readonly ownsTable: boolean;
  private closed = false;

  constructor(options: MemoryOwnershipStoreOptions = {}) {
    if (options.table && options.clock) {
      throw new InvalidArgumentError(
        'MemoryOwnershipStore: pass the clock to the shared MemoryLeaseTable, not to the store',
      );
    }
    const ownerId = options.ownerId ?? createOwnerId();
    assertLeaseOwnerId(ownerId);
    this.ownerId = ownerId;
    this.ttlSeconds = options.ttlSeconds ?? leaseTtlSeconds();
    this.ttlMs = leaseTtlMilliseconds(this.ttlSeconds);
    this.ownsTable = options.table === undefined;
    this.table = options.table ?? new MemoryLeaseTable({ clock: options.clock });
  }

  async take(sandboxId: string): Promise<boolean> {
    this.check(sandboxId);
    const cur = this.table.get(sandboxId);
    if (cur?.state === 'del') return false;
    this.table.set(sandboxId, 'own', this.ownerId, this.ttlMs);
    return true;
  }

  async claim(sandboxId: string, options: ClaimOptions = {}): Promise<boolean> {
    this.check(sandboxId);
    const forDestroy = options.forDestroy === true;
    const cur = this.table.get(sandboxId);
    if (cur !== undefined && cur.ownerId !== this.ownerId) return false;
    if (cur?.state === 'del' && !forDestroy) return false;
    this.table.set(sandboxId, forDestroy ? 'del' : 'own', this.ownerId, this.ttlMs);
    return true;
  }

  async renew(sandboxId: string): Promise<RenewOutcome> {
    this.check(sandboxId);
    const cur = this.table.get(sandboxId);
    if (cur === undefined) return RenewOutcome.LAPSED;
    if (cur.state !== 'own' || cur.ownerId !== this.ownerId) return RenewOutcome.LOST;
    cur.expiresAt = this.table.clock.now() + this.ttlMs;
    return RenewOutcome.RENEWED;
  }

  async release(sandboxId: string): Promise<void> {
    this.check(sandboxId);
    const cur = this.table.get(sandboxId);
    if (cur !== undefined && cur.ownerId === this.ownerId) this.table.delete(sandboxId);
  }

  async owner(sandboxId: string): Promise<LeaseHolder | undefined> {
    this.check(sandboxId);
    const cur = this.table.get(sandboxId);
    return cur === undefined ? undefined : { state: cur.state, ownerId: cur.ownerId };
  }

  /**
   * A store that owns its table clears it (the process-local leases die with the store). A shared
   * table is left alone, like a Redis client disconnecting: peers' leases, and ours, lapse by TTL.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsTable) this.table.clear();
  }

  /** The stored text of a lease, for diagnostics (`own:<id>` / `del:<id>`). */
  rawValue(sandboxId: string): string | undefined {
    const cur = this.table.get(sandboxId);
    return cur === undefined ? undefined : LeaseValue.encode(cur);
  }

  private check(sandboxId: string): void {
    if (this.closed) throw new OwnershipBackendError('ownership store is closed');
    assertLeaseSandboxId(sandboxId);
  }
}
