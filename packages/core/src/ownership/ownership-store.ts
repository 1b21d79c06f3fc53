import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { InvalidArgumentError } from '../errors/errors.js';

/**
 * Cross-instance ownership of sandboxes (containers, VMs).
 *
 * A lease answers "which gateway instance is responsible for reaping this sandbox", never "who may
 * use it": sandboxes are deterministic per (user, thread), so consecutive turns legitimately land on
 * different instances. That splits the interface in two:
 *
 * - `take()` is the acquire path. It transfers ownership unconditionally, except away from a
 *   teardown (`del:`): a conditional claim there would strand the thread until the previous owner's
 *   lease expired.
 * - `claim()` gates every adopt/reap path. It succeeds only if the lease is absent or already ours.
 *
 * Every implementation follows the same decision table (`me` = this store's `ownerId`):
 *
 * | current     | take          | claim          | claim forDestroy | renew    | release | owner     |
 * |-------------|---------------|----------------|------------------|----------|---------|-----------|
 * | absent      | own:me → true | own:me → true  | del:me → true    | LAPSED   | no-op   | undefined |
 * | own:me      | own:me → true | own:me → true  | del:me → true    | RENEWED  | delete  | me        |
 * | del:me      | false         | false          | del:me → true    | LOST     | delete  | me        |
 * | own:peer    | own:me → true | false          | false            | LOST     | no-op   | peer      |
 * | del:peer    | false         | false          | false            | LOST     | no-op   | peer      |
 *
 * Every write resets the TTL to the full lease TTL; `renew` extends only `own:me` and never
 * (re-)acquires; all read-modify-writes are atomic.
 *
 * Failure semantics: a store that cannot answer raises `OwnershipBackendError`, which means
 * "unknown"; a `false` return means "definitively not ours". Callers decide per path whether unknown
 * fails closed (establishment, reaping) or open (renewal).
 */
export interface OwnershipStore {
  /** This instance's identity, written into every lease it holds. */
  readonly ownerId: string;
  /**
   * Whether peers in other processes see these leases. `false` (memory) means every instance is
   * alone: there is no cross-process coordination at all, so multi-worker deployments need a shared
   * store.
   */
  readonly supportsCrossProcess: boolean;
  /** Acquire path: take the lease over from anyone but a teardown. `false` only against `del:`. */
  take(sandboxId: string): Promise<boolean>;
  /**
   * Adopt/reap gate: succeed only if the lease is absent or ours. With `forDestroy` the lease is
   * written as `del:` (a stop is in progress; `take()` is refused until it is released or lapses).
   * A non-destroy claim refuses our own `del:`: the stop it marks is already in flight, and
   * downgrading the marker would let a `take()` hand out a sandbox about to die.
   */
  claim(sandboxId: string, options?: ClaimOptions): Promise<boolean>;
  /** Extend our `own:` lease. Distinguishes "absent" (`LAPSED`) from "someone else's" (`LOST`). */
  renew(sandboxId: string): Promise<RenewOutcome>;
  /** Drop our own lease in either state. Never clears a peer's lease. */
  release(sandboxId: string): Promise<void>;
  /** Read-only peek at the current holder; `undefined` when the lease is absent or expired. */
  owner(sandboxId: string): Promise<LeaseHolder | undefined>;
  /** Idempotent. Later calls on the store raise `OwnershipBackendError`. */
  close(): Promise<void>;
}

export interface ClaimOptions {
  /** Mark the lease as a teardown (`del:`) instead of plain ownership (`own:`). */
  forDestroy?: boolean;
}

export const RenewOutcome = {
  /** The lease was ours (`own:`) and its TTL was extended. */
  RENEWED: 'RENEWED',
  /**
   * The lease is absent: nobody holds it. The caller should re-establish it with `claim()`; a
   * store restart without persistence produces this for every lease at once.
   */
  LAPSED: 'LAPSED',
  /** Someone else holds it, or it is our own teardown marker. Never re-take it. */
  LOST: 'LOST',
} as const;
export type RenewOutcome = (typeof RenewOutcome)[keyof typeof RenewOutcome];

/** `own`: responsible for the sandbox. `del`: a stop of the sandbox is in progress. */
export type LeaseState = 'own' | 'del';

export interface LeaseHolder {
  state: LeaseState;
  ownerId: string;
}

/**
 * The stored text of a lease: `own:<ownerId>` or `del:<ownerId>`. The owner id itself contains `:`
 * (`hostname:uuid`), so the state is always exactly the first four characters.
 */
export const LeaseValue = {
  encode(holder: LeaseHolder): string {
    return `${holder.state}:${holder.ownerId}`;
  },
  own(ownerId: string): string {
    return `own:${ownerId}`;
  },
  del(ownerId: string): string {
    return `del:${ownerId}`;
  },
  /** `undefined` for text that is not a lease value (wrong prefix or empty owner). */
  decode(raw: string): LeaseHolder | undefined {
    const state = raw.slice(0, 4);
    const ownerId = raw.slice(4);
    if (ownerId === '') return undefined;
    if (state === 'own:') return { state: 'own', ownerId };
    if (state === 'del:') return { state: 'del', ownerId };
    return undefined;
  },
} as const;

/** The two knobs the lease TTL is derived from (`sandbox.ownership` in the configuration). */
export interface LeaseTimingConfig {
  renewalIntervalSeconds: number;
  ttlMultiplier: number;
}

export const DEFAULT_RENEWAL_INTERVAL_SECONDS = 30;
export const DEFAULT_TTL_MULTIPLIER = 4;

/**
 * Lease TTL = renewal interval × multiplier (default 30 × 4 = 120 s). The multiplier must be at
 * least 2 so a live owner always renews at least once before its lease can lapse; it is never
 * derived from an idle timeout, because liveness and reaping must not share a switch.
 */
export function leaseTtlSeconds(config: Partial<LeaseTimingConfig> = {}): number {
  const interval = config.renewalIntervalSeconds ?? DEFAULT_RENEWAL_INTERVAL_SECONDS;
  const multiplier = config.ttlMultiplier ?? DEFAULT_TTL_MULTIPLIER;
  if (!Number.isFinite(interval) || interval <= 0) {
    throw new InvalidArgumentError(
      `ownership renewalIntervalSeconds must be a finite number > 0, got ${interval}`,
    );
  }
  if (!Number.isFinite(multiplier) || multiplier < 2) {
    throw new InvalidArgumentError(
      `ownership ttlMultiplier must be a finite number >= 2, got ${multiplier}`,
    );
  }
  return interval * multiplier;
}

/** The TTL in whole milliseconds as both stores apply it (never below 1 ms). */
export function leaseTtlMilliseconds(ttlSeconds: number): number {
  if (!Number.isFinite(ttlSeconds) || ttlSeconds <= 0) {
    throw new InvalidArgumentError(
      `lease TTL must be a finite number of seconds > 0, got ${ttlSeconds}`,
    );
  }
  return Math.max(1, Math.floor(ttlSeconds * 1000));
}

/**
 * A fresh owner id, `<hostname>:<uuid hex>`: unique per store instance, so two workers on one host
 * never share an identity, and the hostname tells an operator reading the store where a lease lives.
 */
export function createOwnerId(): string {
  return `${hostname()}:${randomUUID().replace(/-/g, '')}`;
}

/** Rejects ids that cannot name a lease; shared by every store so they fail identically. */
export function assertLeaseSandboxId(sandboxId: unknown): asserts sandboxId is string {
  if (typeof sandboxId !== 'string' || sandboxId === '') {
    throw new InvalidArgumentError(
      `sandbox id must be a non-empty string, got ${JSON.stringify(sandboxId)}`,
    );
  }
}

/** Rejects owner ids that would not round-trip through `LeaseValue`. */
export function assertLeaseOwnerId(ownerId: unknown): asserts ownerId is string {
  if (typeof ownerId !== 'string' || ownerId === '') {
    throw new InvalidArgumentError(
      `owner id must be a non-empty string, got ${JSON.stringify(ownerId)}`,
    );
  }
}
