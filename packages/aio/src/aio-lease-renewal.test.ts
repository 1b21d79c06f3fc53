import { track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';
import type { Harness } from './testing/provider-harness.js';

// Lease renewal against the other paths: what a renewal may conclude from an answer that is stale
// by the time it acts, and who re-establishes a lease a flush erased.

const { harness, peerOf } = harnessContext();

async function warmSandbox(h: Harness, thread = 't'): Promise<string> {
  const id = await h.provider.acquire(T(thread));
  await h.provider.release(id);
  expect(h.provider.stateSnapshot().warm).toContain(id);
  return id;
}

describe('a renewal that heard LOST while a reaper held the sandbox', () => {
  it('does not mark it superseded once an acquire re-took it: the warm reaper later stops it, nothing leaks', async () => {
    const a = await harness();
    const x = await warmSandbox(a);
    const peer = a.peerStore();
    expect(await peer.take(x)).toBe(true); // a later turn elsewhere took it
    // A's warm reaper reserves X and asks about its lease; its renewal runs meanwhile.
    a.store.pause('renew', { times: 1 });
    const evict = track(a.provider.evictOldestWarm());
    const reaperRenew = await a.store.nextCall('renew');
    a.store.pause('owner', { times: 1, phase: 'after' });
    const renewal = track(a.provider.renewLeases()); // LOST; kept (reserved); asks who holds it
    const peek = await a.store.nextCall('owner'); // answered "the peer", not yet delivered
    await reaperRenew.release();
    expect(await evict.promise).toBeUndefined(); // refused: the peer holds it
    // The thread's next turn lands here again and takes the sandbox back.
    expect(await a.provider.acquire(T('t'))).toBe(x);
    expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    await peek.release(); // the stale answer arrives
    await renewal.promise;
    await a.provider.release(x);
    expect(a.provider.stateSnapshot().warm).toEqual([x]);
    // Ours, parked: the reaper stops it rather than forgetting a running container.
    expect(await a.provider.evictOldestWarm()).toBe(x);
    expect(a.backend.isRunning(x)).toBe(false);
    expect(a.lease(x)).toBeUndefined();
  });
});

describe('a flush erases every lease: the holder using a sandbox keeps it (stale warm holder)', () => {
  /**
   * A parked X, then paused past the TTL; B took the thread for a turn meanwhile; the store is
   * flushed before A's renewal could read LOST.
   */
  async function staleWarmHolder() {
    const a = await harness({ crossProcess: true });
    const b = await peerOf(a);
    const x = await warmSandbox(a);
    expect(await b.provider.acquire(T('t'))).toBe(x); // B's turn runs in X now
    a.table.clear(); // FLUSHALL
    return { a, b, x };
  }

  it('A’s renewal does not re-establish the lease under B’s turn; B keeps X and A forgets it', async () => {
    const { a, b, x } = await staleWarmHolder();
    await a.provider.renewLeases(); // A resumes first: LAPSED
    await b.provider.renewLeases(); // B, within one interval: LAPSED, and B is using X
    expect(a.lease(x)).toBe(`own:${b.ownerId}`);
    expect(b.provider.get(x)).toBeDefined();
    expect(await a.provider.evictOldestWarm()).toBeUndefined();
    expect(a.backend.isRunning(x)).toBe(true);
    await a.clock.advance(30_000);
    await a.provider.renewLeases(); // A's second look: B's lease, so A forgets its stale entry
    expect(a.provider.stateSnapshot().warm).toEqual([]);
    expect(a.backend.isRunning(x)).toBe(true);
    expect(b.provider.get(x)).toBeDefined();
  });

  it('A’s warm reaper, running before any renewal, does not stop X under B’s turn', async () => {
    const { a, b, x } = await staleWarmHolder();
    expect(await a.provider.evictOldestWarm()).toBeUndefined();
    expect(a.backend.isRunning(x)).toBe(true);
    for (let tick = 0; tick < 21; tick++) {
      await a.clock.advance(30_000);
      await b.provider.renewLeases(); // B's turn goes on
    }
    expect(await a.provider.reapExpiredWarm()).toEqual([]);
    expect(a.backend.isRunning(x)).toBe(true);
    expect(a.lease(x)).toBe(`own:${b.ownerId}`);
    expect(b.provider.get(x)).toBeDefined();
  });

  it('A’s release after a flush does not win X back from B’s turn either', async () => {
    const a = await harness({ crossProcess: true });
    const b = await peerOf(a);
    const x = await a.provider.acquire(T('t'));
    expect(await b.provider.acquire(T('t'))).toBe(x); // B's turn began before A's ended
    a.table.clear();
    await a.provider.release(x); // A parks X: LAPSED
    await b.provider.renewLeases();
    expect(a.lease(x)).toBe(`own:${b.ownerId}`);
    expect(b.provider.get(x)).toBeDefined();
    expect(await a.provider.evictOldestWarm()).toBeUndefined();
    expect(a.backend.isRunning(x)).toBe(true);
  });

  it('with no other holder, the parked lease is re-established one interval later and reaped as usual', async () => {
    const a = await harness({ crossProcess: true });
    const x = await warmSandbox(a);
    a.table.clear();
    await a.provider.renewLeases();
    expect(a.lease(x)).toBeUndefined(); // waiting: someone using X would have renewed by now
    await a.clock.advance(29_999);
    await a.provider.renewLeases();
    expect(a.lease(x)).toBeUndefined();
    await a.clock.advance(1);
    await a.provider.renewLeases();
    expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    expect(a.provider.stateSnapshot().warm).toEqual([x]);
    expect(await a.provider.evictOldestWarm()).toBe(x);
    expect(a.backend.isRunning(x)).toBe(false);
  });

  it('a parked lease re-taken by this instance meanwhile starts its wait afresh on the next lapse', async () => {
    const a = await harness({ crossProcess: true });
    const x = await warmSandbox(a);
    a.table.clear();
    await a.provider.renewLeases(); // first look: absent
    await a.clock.advance(20_000);
    await a.provider.renewLeases(); // still inside the interval
    expect(await a.provider.acquire(T('t'))).toBe(x); // a turn re-takes it
    await a.provider.release(x);
    await a.clock.advance(20_000);
    await a.provider.renewLeases(); // renewed: the earlier look is forgotten
    a.table.clear();
    await a.provider.renewLeases(); // a new first look
    expect(a.lease(x)).toBeUndefined();
    await a.clock.advance(30_000);
    await a.provider.renewLeases();
    expect(a.lease(x)).toBe(`own:${a.ownerId}`);
  });
});

describe('a superseded mark and this instance taking the sandbox back', () => {
  it('an acquire that re-takes a sandbox marked superseded clears the mark: the warm reaper stops it later', async () => {
    const a = await harness();
    const x = await warmSandbox(a);
    expect(await a.peerStore().take(x)).toBe(true);
    a.store.pause('renew', { times: 1 });
    const evict = track(a.provider.evictOldestWarm());
    const reaperRenew = await a.store.nextCall('renew'); // the reaper holds X
    await a.provider.renewLeases(); // LOST, kept (reserved), the peer holds it: superseded
    await reaperRenew.release();
    expect(await evict.promise).toBeUndefined();
    expect(await a.provider.acquire(T('t'))).toBe(x); // the next turn takes it back
    await a.provider.release(x);
    expect(await a.provider.evictOldestWarm()).toBe(x);
    expect(a.backend.isRunning(x)).toBe(false);
  });
});

describe('lapse sightings', () => {
  it('a sighting of an id no longer tracked is dropped: adopted again later, it waits afresh after a flush', async () => {
    const a = await harness({ crossProcess: true });
    const x = await warmSandbox(a);
    a.table.clear();
    await a.provider.renewLeases(); // first look: absent
    await a.provider.destroy(x);
    await a.provider.renewLeases(); // X is no longer tracked here
    a.backend.startExternal(x); // a container of that id again, left by someone else
    expect((await a.provider.reconcile()).deferred).toEqual([x]);
    await a.clock.advance(120_000);
    expect((await a.provider.reconcile()).adopted).toEqual([x]);
    a.table.clear();
    await a.provider.renewLeases(); // a first look again, not the old one
    expect(a.lease(x)).toBeUndefined();
  });

  it('a re-claim a peer beat reads as lost: the sandbox is forgotten, not kept as renewed', async () => {
    const a = await harness();
    const x = await a.provider.acquire(T('t'));
    a.table.clear();
    a.store.pause('claim', { times: 1 });
    const renewal = track(a.provider.renewLeases()); // LAPSED: re-claims at once
    const claim = await a.store.nextCall('claim');
    const peer = a.peerStore();
    expect(await peer.take(x)).toBe(true); // the peer got there first
    await claim.release();
    await renewal.promise;
    expect(a.provider.get(x)).toBeUndefined();
    expect(a.lease(x)).toBe(`own:${peer.ownerId}`);
    expect(a.backend.isRunning(x)).toBe(true);
  });
});
