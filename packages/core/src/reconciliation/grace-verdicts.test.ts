import { describe, expect, it } from 'vitest';
import { ageVerdict, leaseGraceVerdict } from './grace-verdicts.js';
import { Sightings } from './sightings.js';

const absent = { kind: 'absent' } as const;

describe('leaseGraceVerdict', () => {
  it('waits a whole grace from the first unowned sighting', () => {
    const first = leaseGraceVerdict({
      crossProcess: true,
      peek: absent,
      firstUnownedAt: undefined,
      now: 1000,
      graceMs: 500,
    });
    expect(first).toEqual({ verdict: { kind: 'waiting' }, firstUnownedAt: 1000 });
    const early = leaseGraceVerdict({
      crossProcess: true,
      peek: absent,
      firstUnownedAt: 1000,
      now: 1499,
      graceMs: 500,
    });
    // The first sighting is kept while waiting: handing back `now` would restart the wait on
    // every look, so it would never end.
    expect(early).toEqual({ verdict: { kind: 'waiting' }, firstUnownedAt: 1000 });
    const due = leaseGraceVerdict({
      crossProcess: true,
      peek: absent,
      firstUnownedAt: 1000,
      now: 1500,
      graceMs: 500,
    });
    expect(due.verdict.kind).toBe('adoptable');
  });

  it('a holder resets the wait (a live owner republished after a flush)', () => {
    const holder = { state: 'own', ownerId: 'peer' } as const;
    const out = leaseGraceVerdict({
      crossProcess: true,
      peek: { kind: 'held', holder },
      firstUnownedAt: 1000,
      now: 9000,
      graceMs: 500,
    });
    expect(out).toEqual({ verdict: { kind: 'owned', holder }, firstUnownedAt: undefined });
  });

  it('an unanswerable store is never adoptable, and the wait starts again after it', () => {
    const error = new Error('down');
    const out = leaseGraceVerdict({
      crossProcess: true,
      peek: { kind: 'unknown', error },
      firstUnownedAt: 1000,
      now: 9000,
      graceMs: 500,
    });
    // The owner could not republish while the store was down: that time is not "seen unowned".
    expect(out).toEqual({ verdict: { kind: 'unknown', error }, firstUnownedAt: undefined });
  });

  it('a store failure seen since the first sighting starts the wait again', () => {
    const look = (storeFailedAt: number | undefined, now: number, firstUnownedAt = 1000) =>
      leaseGraceVerdict({
        crossProcess: true,
        peek: absent,
        firstUnownedAt,
        now,
        graceMs: 500,
        storeFailedAt,
      });
    expect(look(1200, 9000)).toEqual({ verdict: { kind: 'waiting' }, firstUnownedAt: 9000 });
    // A failure before the first sighting (or at its very moment) was already over then.
    expect(look(999, 1500).verdict.kind).toBe('adoptable');
    expect(look(1000, 1500).verdict.kind).toBe('adoptable');
    expect(look(undefined, 1500).verdict.kind).toBe('adoptable');
    // The restarted wait is a whole grace from the look after the failure.
    expect(look(1200, 9499, 9000).verdict.kind).toBe('waiting');
    expect(look(1200, 9500, 9000).verdict.kind).toBe('adoptable');
  });

  it('a store without cross-process visibility has nothing to wait for', () => {
    const out = leaseGraceVerdict({
      crossProcess: false,
      peek: absent,
      firstUnownedAt: undefined,
      now: 0,
      graceMs: 500,
    });
    expect(out.verdict.kind).toBe('adoptable');
  });
});

describe('ageVerdict', () => {
  it('counts from the creation time when there is one, else from the first sighting', () => {
    expect(ageVerdict({ createdAt: 0, firstSeenAt: 900, now: 1000, graceMs: 500 })).toEqual({
      kind: 'due',
    });
    expect(ageVerdict({ createdAt: undefined, firstSeenAt: 900, now: 1000, graceMs: 500 })).toEqual(
      {
        kind: 'young',
        ageMs: 100,
        graceMs: 500,
        from: 'seen',
      },
    );
    expect(ageVerdict({ createdAt: 800, firstSeenAt: 0, now: 1000, graceMs: 500 })).toMatchObject({
      kind: 'young',
      from: 'created',
    });
  });

  it('is due exactly one grace after its start', () => {
    const at = (now: number) => ageVerdict({ createdAt: 1000, firstSeenAt: 0, now, graceMs: 500 });
    expect(at(1499).kind).toBe('young');
    expect(at(1500).kind).toBe('due');
  });
});

describe('Sightings', () => {
  it('keeps the first sighting and prunes ids a listing no longer shows', () => {
    const s = new Sightings();
    expect(s.observe('a', 1)).toBe(1);
    expect(s.observe('a', 5)).toBe(1);
    s.observe('b', 2);
    s.keepOnly(['a']);
    expect(s.get('b')).toBeUndefined();
    expect(s.size).toBe(1);
    s.set('a', undefined);
    expect(s.size).toBe(0);
  });
});
