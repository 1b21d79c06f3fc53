import type { Clock } from '../async/clock.js';
import {
  CAPACITY_META_FIELD_COUNT,
  CAPACITY_META_HARD_LIMIT,
  CAPACITY_META_REVISION,
  CAPACITY_META_STATE,
  CAPACITY_MISSING_PREFIX,
  CAPACITY_RESERVATION_PREFIX,
  CAPACITY_SANDBOX_PREFIX,
  CapacityReserveOutcome,
  assertCapacityHardLimit,
  assertCapacityInventory,
  assertCapacityToken,
  assertCapacitySandboxId,
  capacityMismatchMessage,
} from './capacity-store.js';
import type { CapacityInventory, CapacityStore } from './capacity-store.js';
import { CapacityBackendError, InvalidArgumentError } from '../errors/errors.js';

/**
 * The field map behind one or more `MemoryCapacityStore`s — the same layout as the Redis hash, so
 * both implementations count slots the same way (field count − 3). Several stores sharing a ledger
 * model several gateways on one backend. The clock stands in for the Redis server's `TIME`, so it
 * is a wall clock (milliseconds) by default.
 */
export class MemoryCapacityLedger {
  readonly clock: Pick<Clock, 'now'>;
  readonly fields = new Map<string, string>();

  constructor(options: { clock?: Pick<Clock, 'now'> } = {}) {
    this.clock = options.clock ?? { now: () => Date.now() };
  }

  /** A copy of every field, for diagnostics and tests. */
  snapshot(): Record<string, string> {
    return Object.fromEntries(this.fields);
  }

  /** Drop everything, like a Redis restart without persistence. */
  clear(): void {
    this.fields.clear();
  }
}

export interface MemoryCapacityStoreOptions {
  hardLimit: number;
  ledger?: MemoryCapacityLedger;
  clock?: Pick<Clock, 'now'>;
}

/**
 * In-process `CapacityStore`. The provider only needs a ledger when gateways share a Redis; this
 * implementation exists so the ledger's semantics can be exercised (and conformance-tested) without
 * one, and so a host can run the deployment-wide code path in a single process.
 *
 * Every operation runs synchronously before its only await point, which makes it atomic exactly as
 * the Lua script is.
 */
export class MemoryCapacityStore implements CapacityStore {
  readonly hardLimit: number;
  readonly ledger: MemoryCapacityLedger;
  private readonly limitText: string;
  private closed = false;

  constructor(options: MemoryCapacityStoreOptions) {
    assertCapacityHardLimit(options.hardLimit);
    if (options.ledger && options.clock) {
      throw new InvalidArgumentError(
        'MemoryCapacityStore: pass the clock to the shared MemoryCapacityLedger, not to the store',
      );
    }
    this.hardLimit = options.hardLimit;
    this.limitText = String(options.hardLimit);
    this.ledger = options.ledger ?? new MemoryCapacityLedger({ clock: options.clock });
  }

  async revision(): Promise<number> {
    this.prelude();
    return this.readRevision();
  }

  async reserve(token: string): Promise<CapacityReserveOutcome> {
    assertCapacityToken(token);
    const f = this.prelude();
    if (f.get(CAPACITY_META_STATE) !== 'ready') return CapacityReserveOutcome.NOT_READY;
    const field = CAPACITY_RESERVATION_PREFIX + token;
    if (f.has(field)) return CapacityReserveOutcome.GRANTED;
    if (f.size - CAPACITY_META_FIELD_COUNT >= this.hardLimit) return CapacityReserveOutcome.FULL;
    f.set(field, String(this.nowMs()));
    this.bump();
    return CapacityReserveOutcome.GRANTED;
  }

  async track(sandboxId: string, token?: string): Promise<void> {
    assertCapacitySandboxId(sandboxId);
    const f = this.prelude();
    this.initialiseIfMissing();
    let changed = false;
    if (token && f.delete(CAPACITY_RESERVATION_PREFIX + token)) changed = true;
    const field = CAPACITY_SANDBOX_PREFIX + sandboxId;
    if (f.get(field) !== '1') {
      f.set(field, '1');
      changed = true;
    }
    if (changed) this.bump();
  }

  async release(sandboxId: string): Promise<void> {
    if (!sandboxId) return;
    const f = this.prelude();
    if (f.has(CAPACITY_META_STATE) && f.delete(CAPACITY_SANDBOX_PREFIX + sandboxId)) this.bump();
  }

  async reconcile(inventory: CapacityInventory): Promise<boolean> {
    assertCapacityInventory(inventory);
    const f = this.prelude();
    if (!f.has(CAPACITY_META_STATE)) {
      if (inventory.expectedRevision !== 0) return false;
      this.initialiseIfMissing();
    }
    if (this.readRevision() !== inventory.expectedRevision) return false;

    let changed = false;
    const remote = new Set<string>();
    for (const { sandboxId, reservationToken } of inventory.entries) {
      remote.add(sandboxId);
      if (reservationToken && f.delete(CAPACITY_RESERVATION_PREFIX + reservationToken))
        changed = true;
      const field = CAPACITY_SANDBOX_PREFIX + sandboxId;
      if (f.get(field) !== '1') {
        f.set(field, '1');
        changed = true;
      }
    }

    if (inventory.complete) {
      const now = this.nowMs();
      const staleBefore = now - Math.floor(inventory.maxAgeMs);
      for (const [field, value] of [...f]) {
        if (field.startsWith(CAPACITY_SANDBOX_PREFIX)) {
          if (remote.has(field.slice(CAPACITY_SANDBOX_PREFIX.length))) continue;
          const marker = value.startsWith(CAPACITY_MISSING_PREFIX)
            ? parseNumber(value.slice(CAPACITY_MISSING_PREFIX.length))
            : undefined;
          if (marker === undefined) {
            f.set(field, CAPACITY_MISSING_PREFIX + String(now));
            changed = true;
          } else if (marker <= staleBefore) {
            f.delete(field);
            changed = true;
          }
        } else if (field.startsWith(CAPACITY_RESERVATION_PREFIX)) {
          const reservedAt = parseNumber(value);
          if (reservedAt !== undefined && reservedAt <= staleBefore) {
            f.delete(field);
            changed = true;
          }
        }
      }
      if (f.get(CAPACITY_META_STATE) !== 'ready') {
        f.set(CAPACITY_META_STATE, 'ready');
        changed = true;
      }
    }
    if (changed) this.bump();
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** The mismatch check every operation starts with; returns the field map. */
  private prelude(): Map<string, string> {
    if (this.closed) throw new CapacityBackendError('capacity store is closed');
    const f = this.ledger.fields;
    if (f.has(CAPACITY_META_STATE)) {
      const stored = f.get(CAPACITY_META_HARD_LIMIT);
      if (stored !== this.limitText) {
        throw new CapacityBackendError(
          capacityMismatchMessage(this.limitText, stored ?? '<missing>'),
        );
      }
    }
    return f;
  }

  private initialiseIfMissing(): void {
    const f = this.ledger.fields;
    if (f.has(CAPACITY_META_STATE)) return;
    f.set(CAPACITY_META_STATE, 'initializing');
    f.set(CAPACITY_META_HARD_LIMIT, this.limitText);
    f.set(CAPACITY_META_REVISION, '0');
  }

  private readRevision(): number {
    return parseNumber(this.ledger.fields.get(CAPACITY_META_REVISION) ?? '0') ?? 0;
  }

  private bump(): void {
    this.ledger.fields.set(CAPACITY_META_REVISION, String(this.readRevision() + 1));
  }

  private nowMs(): number {
    return Math.floor(this.ledger.clock.now());
  }
}

function parseNumber(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}
