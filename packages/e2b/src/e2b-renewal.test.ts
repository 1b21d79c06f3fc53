import { OwnershipBackendError } from '@sbx/core';
import { ManualClock, pausable, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, sharedLeases } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';

// Lease renewal forgets a VM only when a peer really took it: a `LOST` answer is stale when an
// acquire re-took the lease meanwhile (its epoch moved, or its intent mark is up), and a VM this
// instance is tearing down answers with our own `del:` marker.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const h = await makeHarness(options);
  cleanups.push(h.cleanup);
  return h;
}
const T = (threadId: string) => ({ userId: 'u1', threadId });

/** A provider on a pausable store, and a peer gateway's store on the same lease table. */
async function withPeer(options: HarnessOptions = {}) {
  const clock = new ManualClock(1_700_000_000_000);
  const { mine, peer, table } = sharedLeases(clock);
  const store = pausable(mine);
  const h = await harness({ ...options, clock, ownership: store.proxy });
  return { ...h, store, peer, table };
}

/** Yields `turns` microtasks. */
async function microtasks(turns: number): Promise<void> {
  for (let i = 0; i < turns; i++) await Promise.resolve();
}

describe('lease renewal', () => {
  it('a LOST answer read before an acquire re-took the lease (the epoch moved) does not forget the VM', async () => {
    const h = await withPeer();
    const id = await h.provider.acquire(T('t1'));
    const inUse = h.provider.get(id)!;
    // A peer served a turn meanwhile; this gateway's renewal reads its lease...
    await h.peer.take(id);
    h.store.pause('renew', { phase: 'after', times: 1 });
    const renewal = track(h.provider.renewLeases());
    const renew = await h.store.nextCall('renew');
    // ...and before the answer arrives, this gateway's next turn takes the lease back.
    expect(await h.provider.acquire(T('t1'))).toBe(id);
    await renew.release();
    await renewal.promise;
    expect(h.provider.get(id)).toBe(inUse);
    expect(h.provider.ownsLease(id)).toBe(true);
    expect((await h.ownership.owner(id))?.ownerId).toBe(h.ownership.ownerId);
  });

  it('a reclaim whose take lands anywhere in the renewal’s handling of a LOST answer is not forgotten', async () => {
    // The take is let go one microtask later each round, so it lands once before the renewal
    // reads the epoch, once between that read and the forget, and once after.
    for (let turns = 0; turns <= 24; turns++) {
      const h = await withPeer();
      const id = await h.provider.acquire(T('t1'));
      await h.provider.release(id);
      await h.peer.take(id);
      h.store.pause('renew', { phase: 'after', times: 1 });
      const renewal = track(h.provider.renewLeases());
      const renew = await h.store.nextCall('renew');
      h.store.pause('take', { phase: 'after', times: 1 });
      const reclaim = track(h.provider.acquire(T('t1')));
      const take = await h.store.nextCall('take');
      void renew.release();
      await microtasks(turns);
      void take.release();
      await renewal.promise;
      expect(await reclaim.promise).toBe(id);
      // Still this gateway's: renewal keeps the lease of the VM it has just handed out.
      expect({ turns, owns: h.provider.ownsLease(id) }).toEqual({ turns, owns: true });
      expect(h.provider.get(id)).toBeDefined();
      await h.cleanup();
      cleanups.pop();
    }
  });

  it('skips a VM under a held teardown: its own del: marker is not read as a takeover', async () => {
    const h = await withPeer({ config: { replicas: 1, overflow_policy: 'reject' } });
    const a = await h.provider.acquire(T('a'));
    await h.provider.release(a);
    h.fake.gate.pause('kill', { times: 1 });
    // A second thread at the cap evicts the warm VM: its kill is held under our del: marker.
    const b = track(h.provider.acquire(T('b')));
    const kill = await h.fake.gate.nextCall('kill');
    const renewsBefore = h.store.count('renew');
    await h.provider.renewLeases();
    expect(h.store.calls('renew').slice(renewsBefore)).toEqual([]);
    expect(h.logger.text('info')).not.toContain('A peer took over');
    await kill.release();
    expect(h.provider.get(await b.promise)).toBeDefined();
  });

  it('a warm VM a peer took is dropped from the pool: a reclaim would take it back mid-turn', async () => {
    const h = await withPeer();
    const id = await h.provider.acquire(T('t1'));
    await h.provider.release(id);
    await h.peer.take(id);
    await h.provider.renewLeases();
    expect(h.provider.warmIds()).toEqual([]);
    expect(h.provider.capacitySnapshot().total).toBe(0);
    expect((await h.peer.owner(id))?.ownerId).toBe(h.peer.ownerId);
  });

  it('a pass in flight when shutdown begins stops: it re-claims no lapsed lease of a VM shutdown killed', async () => {
    const h = await withPeer();
    const first = await h.provider.acquire(T('t1'));
    const second = await h.provider.acquire(T('t2'));
    h.store.pause('renew', { times: 1 });
    const renewal = track(h.provider.renewLeases());
    const renew = await h.store.nextCall('renew');
    expect(renew.args[0]).toBe(first);
    await h.provider.shutdown();
    await renew.release();
    await renewal.promise;
    expect(h.fake.vms.get(second)!.alive).toBe(false);
    expect(await h.ownership.owner(second)).toBeUndefined();
  });

  it('a store that cannot answer keeps every VM (renew or re-claim unanswered)', async () => {
    const h = await withPeer();
    const active = await h.provider.acquire(T('t1'));
    h.store.pause('renew', { times: 1 });
    const renewal = track(h.provider.renewLeases());
    (await h.store.nextCall('renew')).fail(new OwnershipBackendError('store down'));
    await renewal.promise;
    expect(h.provider.get(active)).toBeDefined();
    expect(h.provider.ownsLease(active)).toBe(true);
    // A lapsed lease whose re-claim goes unanswered is kept too.
    h.table.expire(active);
    h.store.pause('claim', { times: 1 });
    const again = track(h.provider.renewLeases());
    (await h.store.nextCall('claim')).fail(new OwnershipBackendError('store down'));
    await again.promise;
    expect(h.provider.get(active)).toBeDefined();
    expect(h.provider.ownsLease(active)).toBe(true);
  });

  it('a warm eviction during a store outage keeps the VM (not known to be a peer’s)', async () => {
    const h = await withPeer({ config: { replicas: 1, overflow_policy: 'reject' } });
    const a = await h.provider.acquire(T('a'));
    await h.provider.release(a);
    h.store.pause('renew', { times: 1 });
    const b = track(h.provider.acquire(T('b')));
    (await h.store.nextCall('renew')).fail(new OwnershipBackendError('store down'));
    await b.promise.catch(() => undefined);
    expect(h.provider.warmIds()).toEqual([a]);
    expect(h.provider.ownsLease(a)).toBe(true);
    expect(h.fake.vms.get(a)!.alive).toBe(true);
  });

  it('a peer’s lease makes renewal forget the VM, closing its client, without a kill', async () => {
    const h = await withPeer();
    const id = await h.provider.acquire(T('t1'));
    await h.peer.take(id);
    await h.provider.renewLeases();
    expect(h.provider.get(id)).toBeUndefined();
    expect(h.provider.ownsLease(id)).toBe(false);
    expect(h.fake.callsOf('close', id).length).toBeGreaterThan(0);
    expect(h.fake.callsOf('kill', id)).toHaveLength(0);
    // Its slot is free: a new thread gets a VM at once.
    expect(h.provider.capacitySnapshot().total).toBe(0);
  });
});
