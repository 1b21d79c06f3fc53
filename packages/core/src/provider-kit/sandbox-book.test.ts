import { describe, expect, it } from 'vitest';
import { ManualClock } from '../testing/manual-clock.js';
import { WarmPool } from '../warm-pool/warm-pool.js';
import { SandboxBook } from './sandbox-book.js';

function book(extra?: (id: string) => 'adopting' | 'tombstone' | undefined) {
  const clock = new ManualClock(1000);
  const pool = new WarmPool<string>({ destroy: async () => true, clock, replicas: 5 });
  return {
    clock,
    pool,
    book: new SandboxBook<{ name: string }, string>({ pool, clock, extraState: extra }),
  };
}

describe('SandboxBook', () => {
  it('one state per id, a teardown reservation winning over active and warm', () => {
    const { book: b, pool } = book((id) => (id === 't' ? 'tombstone' : undefined));
    expect(b.stateOf('x')).toBe('untracked');
    const end = b.beginCreating('x');
    expect(b.stateOf('x')).toBe('creating');
    end();
    b.install('x', { name: 'x' }, 'thread');
    expect(b.stateOf('x')).toBe('active');
    const reservation = pool.reserve('x');
    expect(b.stateOf('x')).toBe('tearing-down');
    reservation?.release();
    b.untrackActive('x');
    pool.put('x', 'warm');
    expect(b.stateOf('x')).toBe('warm');
    expect(b.stateOf('t')).toBe('tombstone');
  });

  it('install drops the warm entry: active and warm are exclusive', () => {
    const { book: b, pool } = book();
    pool.put('x', 'warm');
    b.install('x', { name: 'x' }, 'k');
    expect(pool.has('x')).toBe(false);
    expect(b.threadSandbox('k')).toBe('x');
    expect(b.trackedIds()).toEqual(['x']);
  });

  it('untrackActive removes the thread mappings and activity, and honours expected', () => {
    const { book: b } = book();
    const entry = { name: 'x' };
    b.install('x', entry, 'k1');
    expect(b.untrackActive('x', { name: 'other' })).toBeUndefined();
    expect(b.untrackActive('x', entry)).toBe(entry);
    expect(b.hasThread('k1')).toBe(false);
    expect(b.lastActivity('x')).toBeUndefined();
  });

  it('idleIds reports only active ids unused past the timeout; touch resets the wait', async () => {
    const { book: b, clock } = book();
    b.install('a', { name: 'a' }, undefined);
    b.install('b', { name: 'b' }, undefined);
    await clock.advance(600);
    b.touch('b');
    await clock.advance(500);
    expect(b.idleIds(1000)).toEqual(['a']);
    b.touch('ghost');
    expect(b.lastActivity('ghost')).toBeUndefined();
  });

  it('idleIds: an id unused for exactly the timeout is not idle yet; one millisecond more is', async () => {
    const { book: b, clock } = book();
    b.install('a', { name: 'a' }, undefined);
    await clock.advance(1000);
    expect(b.idleIds(1000)).toEqual([]);
    await clock.advance(1);
    expect(b.idleIds(1000)).toEqual(['a']);
  });

  it('the creating mark is counted and each end is idempotent', () => {
    const { book: b } = book();
    const one = b.beginCreating('x');
    const two = b.beginCreating('x');
    one();
    one();
    expect(b.isCreating('x')).toBe(true);
    two();
    expect(b.isCreating('x')).toBe(false);
  });

  it('unmapThread keeps a mapping that points elsewhere now', () => {
    const { book: b } = book();
    b.install('new', { name: 'new' }, 'k');
    b.unmapThread('k', 'old');
    expect(b.threadSandbox('k')).toBe('new');
    b.unmapThread('k', 'new');
    expect(b.hasThread('k')).toBe(false);
  });
});
