import { describe, expect, it } from 'vitest';
import { Deferred, settle, track } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import type { WarmEntry, WarmPoolDestroyReason, WarmPoolOptions } from './warm-pool.js';
import { WarmPool } from './warm-pool.js';

// Teardown reservations: while an id is reserved its entry stays, and nothing parks, reclaims,
// forgets or destroys it a second time. Kept apart from the eviction tests so a broken removal
// fails here instead of spinning an eviction loop.

function harness(options: Partial<WarmPoolOptions<string>> = {}) {
  const clock = new ManualClock(1_000_000);
  const destroyed: [string, WarmPoolDestroyReason][] = [];
  /** Set per id to hold its destroy until the test resolves the deferred. */
  const holding = new Map<string, Deferred>();
  const pool = new WarmPool<string>({
    clock,
    destroy: async (entry, reason) => {
      await holding.get(entry.id)?.promise;
      destroyed.push([entry.id, reason]);
      return true;
    },
    ...options,
  });
  return { pool, clock, destroyed, holding };
}

describe('WarmPool teardown reservations', () => {
  it('the entry stays in the pool, reserved, until its destroy succeeds; take() and put() refuse it meanwhile', async () => {
    const { pool, holding } = harness({ idleTimeoutSeconds: 1 });
    const entry = pool.put('sb', 'v') as WarmEntry<string>;
    const stop = new Deferred();
    holding.set('sb', stop);
    const destroying = track(pool.destroyEntry(entry, 'idle_timeout'));
    await settle();
    expect(pool.has('sb')).toBe(true); // still tracked while the stop runs
    expect(pool.isReserved('sb')).toBe(true);
    expect(pool.take('sb')).toBeUndefined(); // reclaim refused: the stop is in flight
    expect(pool.put('sb', 'again')).toBeUndefined();
    expect(pool.forget('sb')).toBe(false);
    expect(await pool.evictOldest()).toBeUndefined(); // a second reaper is refused too
    stop.resolve();
    expect(await destroying.promise).toBe(true);
    expect(pool.has('sb')).toBe(false);
    expect(pool.isReserved('sb')).toBe(false);
  });

  it('stillReapable is evaluated at the moment of reservation, not when the reaper took its snapshot', async () => {
    const vetoed = new Set<string>();
    const { pool, clock, destroyed, holding } = harness({
      idleTimeoutSeconds: 10,
      stillReapable: (entry) => !vetoed.has(entry.id),
    });
    pool.put('first', 'a');
    await clock.advance(1);
    pool.put('second', 'b');
    await clock.advance(60_000);
    const stop = new Deferred();
    holding.set('first', stop);
    const reaping = pool.reapExpired(); // snapshot: both expired
    await settle();
    vetoed.add('second'); // e.g. the provider promoted it while the first stop ran
    stop.resolve();
    expect(await reaping).toEqual(['first']);
    expect(destroyed).toEqual([['first', 'idle_timeout']]);
    expect(pool.ids()).toEqual(['second']);
  });

  it('a reaper holding a stale entry (reclaimed and parked again) does not destroy the new one', async () => {
    const { pool, destroyed } = harness();
    const stale = pool.put('sb', 'v1') as WarmEntry<string>;
    expect(pool.take('sb', stale)).toBe(stale);
    const fresh = pool.put('sb', 'v2') as WarmEntry<string>;
    expect(pool.take('sb', stale)).toBeUndefined();
    expect(await pool.destroyEntry(stale, 'idle_timeout')).toBe(false);
    expect(destroyed).toEqual([]);
    expect(pool.get('sb')).toBe(fresh);
  });

  it('reserve() guards ids outside the pool too and is released exactly once', () => {
    const { pool } = harness();
    const r = pool.reserve('active-sb');
    expect(r).toBeDefined();
    expect(pool.reserve('active-sb')).toBeUndefined();
    expect(pool.put('active-sb', 'v')).toBeUndefined();
    r?.release();
    r?.release();
    expect(pool.isReserved('active-sb')).toBe(false);
    expect(pool.reserve('x', () => false)).toBeUndefined();
    expect(pool.isReserved('x')).toBe(false);
  });

  it('a reservation released twice does not end a later reservation of the same id', () => {
    const { pool } = harness();
    const first = pool.reserve('sb');
    first?.release();
    const second = pool.reserve('sb');
    expect(second).toBeDefined();
    first?.release();
    expect(pool.isReserved('sb')).toBe(true);
    expect(pool.put('sb', 'v')).toBeUndefined();
    second?.release();
    expect(pool.isReserved('sb')).toBe(false);
  });

  it('forget() with the entry the caller saw leaves an entry parked since alone', () => {
    const { pool } = harness();
    const seen = pool.put('sb', 'v1') as WarmEntry<string>;
    const parkedSince = pool.put('sb', 'v2') as WarmEntry<string>;
    expect(pool.forget('sb', seen)).toBe(false);
    expect(pool.get('sb')).toBe(parkedSince);
    expect(pool.forget('sb', parkedSince)).toBe(true);
    expect(pool.has('sb')).toBe(false);
  });
});
