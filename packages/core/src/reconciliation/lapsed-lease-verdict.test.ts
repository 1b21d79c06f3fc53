import { describe, expect, it } from 'vitest';
import { lapsedLeaseVerdict } from './lapsed-lease-verdict.js';

const parked = { crossProcess: true, inUse: false, waitMs: 1000 } as const;

describe('lapsedLeaseVerdict', () => {
  it('a holder using the sandbox re-establishes its lease at once', () => {
    expect(
      lapsedLeaseVerdict({ ...parked, inUse: true, firstLapsedAt: undefined, now: 5 }),
    ).toEqual({ verdict: { kind: 'reclaim' }, firstLapsedAt: undefined });
    // Also when it saw the lease absent while it was still parking it.
    expect(lapsedLeaseVerdict({ ...parked, inUse: true, firstLapsedAt: 4, now: 5 })).toEqual({
      verdict: { kind: 'reclaim' },
      firstLapsedAt: undefined,
    });
  });

  it('a holder only parking it waits one renewal interval from its first look', () => {
    expect(lapsedLeaseVerdict({ ...parked, firstLapsedAt: undefined, now: 5000 })).toEqual({
      verdict: { kind: 'wait' },
      firstLapsedAt: 5000,
    });
    expect(lapsedLeaseVerdict({ ...parked, firstLapsedAt: 5000, now: 5999 })).toEqual({
      verdict: { kind: 'wait' },
      firstLapsedAt: 5000,
    });
    expect(lapsedLeaseVerdict({ ...parked, firstLapsedAt: 5000, now: 6000 })).toEqual({
      verdict: { kind: 'reclaim' },
      firstLapsedAt: undefined,
    });
  });

  it('a store without cross-process visibility has no peer to give way to', () => {
    expect(
      lapsedLeaseVerdict({ ...parked, crossProcess: false, firstLapsedAt: undefined, now: 5 }),
    ).toEqual({ verdict: { kind: 'reclaim' }, firstLapsedAt: undefined });
  });
});
