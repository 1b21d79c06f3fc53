import { InvalidArgumentError } from '../errors/errors.js';

/**
 * The deployment-wide slot ledger remote providers (E2B) share so `replicas` (plus a bounded burst)
 * limits the whole deployment rather than each gateway process.
 *
 * The ledger is one hash with three `meta:*` fields (`meta:state`, `meta:hard_limit`,
 * `meta:revision`) plus one field per slot: `r:<token>` for an in-flight create (value: ledger time
 * in ms when reserved) and `s:<sandboxId>` for a tracked VM (value `1`, or `m:<ms>` once a complete
 * inventory has omitted it since that time). Every `r:` and `s:` field holds one slot, so usage is
 * the field count minus three.
 *
 * Fail-closed properties:
 * - A fresh or lost ledger admits nothing (`NOT_READY`) until some gateway applies a complete
 *   inventory; `track()` may recreate it (as `initializing`) but never makes it ready.
 * - Gateways configured with different hard limits fail every operation with a
 *   `CapacityBackendError` ("configuration mismatch") instead of silently disagreeing.
 * - An inventory is applied only if the ledger revision still equals the one read before listing
 *   (compare-and-set), so a concurrent reserve/track/release makes it stale rather than undone.
 * - An incomplete inventory removes nothing; a complete one only marks an omitted VM missing and
 *   removes it after `maxAgeMs` more (a listing that just missed a fresh VM frees nothing).
 *
 * Any backend failure raises `CapacityBackendError`.
 */
export interface CapacityStore {
  /** The limit this gateway enforces; every operation checks it against the ledger's. */
  readonly hardLimit: number;
  /** The ledger revision (0 when absent). Read before listing, passed to `reconcile`. */
  revision(): Promise<number>;
  /** Reserve a slot for an in-flight create. Idempotent per token. */
  reserve(token: string): Promise<CapacityReserveOutcome>;
  /**
   * Count a VM that exists, consuming its reservation if `token` is given. Never checks the limit
   * (an existing VM must be counted even if it overflows) and works before the ledger is ready.
   */
  track(sandboxId: string, token?: string): Promise<void>;
  /** Free a tracked VM's slot. Idempotent; never touches reservations; empty ids are ignored. */
  release(sandboxId: string): Promise<void>;
  /**
   * Replace the ledger's view with a remote inventory, if the revision is still `expectedRevision`.
   * Returns `true` when applied, `false` when stale (nothing applied).
   */
  reconcile(inventory: CapacityInventory): Promise<boolean>;
  /** Idempotent. */
  close(): Promise<void>;
}

export const CapacityReserveOutcome = {
  /** A slot is held for `token` (new, or an idempotent retry of the same token). */
  GRANTED: 'GRANTED',
  /** Every slot is in use. */
  FULL: 'FULL',
  /** No complete inventory has been applied yet (fresh or flushed ledger): admit nothing. */
  NOT_READY: 'NOT_READY',
} as const;
export type CapacityReserveOutcome =
  (typeof CapacityReserveOutcome)[keyof typeof CapacityReserveOutcome];

export interface CapacityInventoryEntry {
  sandboxId: string;
  /**
   * The reservation token recorded on the VM at create time. Lets an inventory turn the `r:` of a
   * create that crashed before `track()` into the VM's `s:` entry.
   */
  reservationToken?: string;
}

export interface CapacityInventory {
  /** `revision()` as read before listing. */
  expectedRevision: number;
  /** The VMs the provider's listing returned. */
  entries: readonly CapacityInventoryEntry[];
  /**
   * Whether the listing is known to be complete. Only a complete inventory may mark, remove or
   * expire anything, or flip the ledger to ready.
   */
  complete: boolean;
  /** Grace for omitted VMs and age limit for abandoned reservations, in ms. */
  maxAgeMs: number;
}

export const CAPACITY_META_STATE = 'meta:state';
export const CAPACITY_META_HARD_LIMIT = 'meta:hard_limit';
export const CAPACITY_META_REVISION = 'meta:revision';
/** Number of `meta:*` fields in an initialised ledger; usage = field count − this. */
export const CAPACITY_META_FIELD_COUNT = 3;
export const CAPACITY_RESERVATION_PREFIX = 'r:';
export const CAPACITY_SANDBOX_PREFIX = 's:';
export const CAPACITY_MISSING_PREFIX = 'm:';

export function assertCapacityHardLimit(hardLimit: unknown): asserts hardLimit is number {
  if (typeof hardLimit !== 'number' || !Number.isInteger(hardLimit) || hardLimit < 1) {
    throw new InvalidArgumentError(
      `capacity hardLimit must be an integer >= 1, got ${String(hardLimit)}`,
    );
  }
}

/** Validates an inventory before anything is sent, so a bad caller loses nothing. */
export function assertCapacityInventory(inventory: CapacityInventory): void {
  const { expectedRevision, maxAgeMs, entries } = inventory;
  if (!Number.isSafeInteger(expectedRevision) || expectedRevision < 0) {
    throw new InvalidArgumentError(
      `capacity inventory expectedRevision must be an integer >= 0, got ${String(expectedRevision)}`,
    );
  }
  if (!Number.isFinite(maxAgeMs) || maxAgeMs < 0) {
    throw new InvalidArgumentError(
      `capacity inventory maxAgeMs must be a number >= 0, got ${String(maxAgeMs)}`,
    );
  }
  for (const entry of entries) {
    if (typeof entry.sandboxId !== 'string' || entry.sandboxId === '') {
      throw new InvalidArgumentError('capacity inventory entries need a non-empty sandboxId');
    }
  }
}

export function assertCapacityToken(token: unknown): asserts token is string {
  if (typeof token !== 'string' || token === '') {
    throw new InvalidArgumentError('capacity reservation token must be a non-empty string');
  }
}

export function assertCapacitySandboxId(sandboxId: unknown): asserts sandboxId is string {
  if (typeof sandboxId !== 'string' || sandboxId === '') {
    throw new InvalidArgumentError('capacity track needs a non-empty sandbox id');
  }
}

export function capacityMismatchMessage(configured: string, ledger: string): string {
  return `capacity ledger configuration mismatch: configured hard_limit=${configured}, ledger hard_limit=${ledger}`;
}
