/**
 * What a holder does when its renewal finds its lease absent (`LAPSED`: a store flush, a restart
 * without persistence). The answer depends on whether it is using the sandbox or only parking it:
 * a lease is absent after a flush for every holder at once, including a stale one (paused past the
 * TTL while a peer took the sandbox over for a turn), and re-establishing it is a plain claim that
 * the first caller wins. A holder that is only parking a sandbox must not win it back from one
 * that is using it, so it re-establishes the lease only after finding it still absent one renewal
 * interval later: a live holder using it renews within that interval and wins.
 */

export type LapsedLeaseVerdict = { readonly kind: 'reclaim' } | { readonly kind: 'wait' };

export interface LapsedLeaseInput {
  /** Whether the store shows peers' leases (false: the in-memory store, no peer can exist). */
  readonly crossProcess: boolean;
  /** The holder is using the sandbox (handed out to a turn), not only parking it between turns. */
  readonly inUse: boolean;
  /** When this holder first found the lease absent while parking the sandbox, if it has. */
  readonly firstLapsedAt: number | undefined;
  readonly now: number;
  /** One renewal interval: a live holder using the sandbox re-establishes its lease within it. */
  readonly waitMs: number;
}

/**
 * `reclaim`: claim the lease now (the claim is still what decides); `wait`: keep the sandbox and
 * look again on the next renewal. Returns the first-lapse time to keep (undefined: forget it).
 */
export function lapsedLeaseVerdict(input: LapsedLeaseInput): {
  readonly verdict: LapsedLeaseVerdict;
  readonly firstLapsedAt: number | undefined;
} {
  if (!input.crossProcess || input.inUse) {
    return { verdict: { kind: 'reclaim' }, firstLapsedAt: undefined };
  }
  const first = input.firstLapsedAt;
  if (first === undefined) return { verdict: { kind: 'wait' }, firstLapsedAt: input.now };
  if (input.now - first >= input.waitMs) {
    return { verdict: { kind: 'reclaim' }, firstLapsedAt: undefined };
  }
  return { verdict: { kind: 'wait' }, firstLapsedAt: first };
}
