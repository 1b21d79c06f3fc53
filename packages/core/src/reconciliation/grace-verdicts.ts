import type { LeaseHolder } from '../ownership/ownership-store.js';
import type { LeasePeek } from '../ownership/lease-peek.js';

/**
 * The reconciliation policy as pure functions: which untracked sandbox may be adopted or reaped,
 * given what the ownership store and the clock say. No I/O here; the callers do the peek and keep
 * the sightings, so every provider applies the same rule and a test can enumerate its cases.
 */

/** What the lease grace says of one untracked sandbox. */
export type LeaseGraceVerdict =
  | { readonly kind: 'adoptable' }
  | { readonly kind: 'waiting' }
  | { readonly kind: 'owned'; readonly holder: LeaseHolder }
  | { readonly kind: 'unknown'; readonly error: unknown };

export interface LeaseGraceInput {
  /** Whether the store shows peers' leases (false: the in-memory store). */
  readonly crossProcess: boolean;
  readonly peek: LeasePeek;
  /** When this instance first saw it unowned, if it has. */
  readonly firstUnownedAt: number | undefined;
  readonly now: number;
  readonly graceMs: number;
  /**
   * When this instance last saw the store fail to answer any call (a peek, a renewal of its own
   * leases...), if it has. A sighting from before that failure no longer counts.
   */
  readonly storeFailedAt?: number | undefined;
}

/**
 * An untracked sandbox is adoptable once seen unowned for a whole grace (the lease TTL): after a
 * store flush every live owner republishes within one renewal interval, shorter than the TTL by
 * construction, while a crashed owner never does. Any holder resets the wait; a store that cannot
 * answer is never adoptable. On a store without cross-process visibility no peer can hold a lease
 * this instance would see, so there is nothing to wait for.
 *
 * The grace counts only time the store was answering: an owner cannot republish while it is down,
 * so an outage after a flush would otherwise let the first look after recovery adopt a live
 * owner's sandbox. An unanswered peek, or a store failure this instance saw since the first
 * sighting, starts the wait again.
 *
 * Returns the verdict and the first-sighting time to keep (undefined: forget the sighting).
 */
export function leaseGraceVerdict(input: LeaseGraceInput): {
  readonly verdict: LeaseGraceVerdict;
  readonly firstUnownedAt: number | undefined;
} {
  if (!input.crossProcess) {
    return { verdict: { kind: 'adoptable' }, firstUnownedAt: input.firstUnownedAt };
  }
  const { peek } = input;
  if (peek.kind === 'unknown') {
    return { verdict: { kind: 'unknown', error: peek.error }, firstUnownedAt: undefined };
  }
  if (peek.kind === 'held') {
    return { verdict: { kind: 'owned', holder: peek.holder }, firstUnownedAt: undefined };
  }
  const first = input.firstUnownedAt;
  if (first === undefined || (input.storeFailedAt !== undefined && input.storeFailedAt > first)) {
    return { verdict: { kind: 'waiting' }, firstUnownedAt: input.now };
  }
  const waited = input.now - first;
  return {
    verdict: waited >= input.graceMs ? { kind: 'adoptable' } : { kind: 'waiting' },
    firstUnownedAt: first,
  };
}

/** What the age rule says of a sandbox that is a candidate for reaping. */
export type AgeVerdict =
  | {
      readonly kind: 'young';
      readonly ageMs: number;
      readonly graceMs: number;
      readonly from: 'created' | 'seen';
    }
  | { readonly kind: 'due' };

/**
 * A candidate's age counts from its creation time when the backend reports a trustworthy one,
 * else from this instance's first sighting, so one a peer has just created and not yet published
 * gets the whole grace.
 */
export function ageVerdict(input: {
  readonly createdAt: number | undefined;
  readonly firstSeenAt: number;
  readonly now: number;
  readonly graceMs: number;
}): AgeVerdict {
  const from = input.createdAt !== undefined ? 'created' : 'seen';
  const ageMs = input.now - (input.createdAt ?? input.firstSeenAt);
  return ageMs < input.graceMs
    ? { kind: 'young', ageMs, graceMs: input.graceMs, from }
    : { kind: 'due' };
}
