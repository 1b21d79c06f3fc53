import {
  OwnershipBackendError,
  SandboxBeingDestroyedError,
  SandboxCapacityExceededError,
} from '@sbx/core';
import { ManualClock, pausable, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { E2B_TAGS } from './metadata.js';
import { makeHarness, sharedLeases } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';

// The acquire paths hand a VM out only once its lease is ours: a take refused by a teardown's
// `del:` marker (a peer's or ours) stops reuse, reclaim and discovery alike, and every check made
// before a round trip is made again after it.

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
const reject = { replicas: 1, overflow_policy: 'reject' };

/** A provider on a pausable store, and a peer gateway's store on the same lease table. */
async function withPeer(options: HarnessOptions = {}) {
  const clock = new ManualClock(1_700_000_000_000);
  const { mine, peer, table } = sharedLeases(clock);
  const store = pausable(mine);
  const h = await harness({ ...options, clock, ownership: store.proxy });
  return { ...h, store, peer, table };
}

/** This gateway's lease on `id` lapsed (a long pause) and a peer's reaper claimed it for a kill. */
async function peerKilling(h: Awaited<ReturnType<typeof withPeer>>, id: string) {
  h.table.expire(id);
  expect(await h.peer.claim(id, { forDestroy: true })).toBe(true);
}

describe('reuse', () => {
  it('does not hand out an active VM a peer is killing (its take is refused)', async () => {
    const h = await withPeer();
    const id = await h.provider.acquire(T('t1'));
    await peerKilling(h, id);
    // Discovery finds the same VM by its tags and is refused too: the turn fails, typed.
    await expect(h.provider.acquire(T('t1'))).rejects.toBeInstanceOf(SandboxBeingDestroyedError);
    expect(h.provider.get(id)).toBeUndefined();
    expect(h.provider.capacitySnapshot().total).toBe(0);
  });

  it('takes its entry again after the round trips: one renewal forgot meanwhile is not handed out', async () => {
    const h = await withPeer();
    const id = await h.provider.acquire(T('t1'));
    const first = h.provider.get(id)!;
    // The reuse refreshes the VM's timeout; meanwhile a peer's turn took the lease and this
    // gateway's renewal forgot the VM (closing its client).
    h.fake.gate.pause('setTimeout', { times: 1 });
    const again = track(h.provider.acquire(T('t1')));
    const refresh = await h.fake.gate.nextCall('setTimeout');
    await h.peer.take(id);
    await h.provider.renewLeases();
    expect(h.provider.get(id)).toBeUndefined();
    await refresh.release();
    // The acquire goes on to discovery, which adopts the VM afresh: a live client, tracked here.
    expect(await again.promise).toBe(id);
    const second = h.provider.get(id);
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect(await second!.executeCommand('echo open')).toContain('open');
  });
});

describe('reclaim', () => {
  it('does not hand out a warm VM a peer is killing (its take is refused); the slot is given back', async () => {
    const h = await withPeer();
    const id = await h.provider.acquire(T('t1'));
    await h.provider.release(id);
    await peerKilling(h, id);
    await expect(h.provider.acquire(T('t1'))).rejects.toBeInstanceOf(SandboxBeingDestroyedError);
    expect(h.provider.get(id)).toBeUndefined();
    expect(h.provider.capacitySnapshot()).toMatchObject({
      transitioning: 0,
      reserved: 0,
      tombstones: 0,
      total: 0,
    });
  });

  it('a store error on the take keeps a tombstone (the VM may be ours), not a free slot', async () => {
    const h = await withPeer();
    const id = await h.provider.acquire(T('t1'));
    await h.provider.release(id);
    h.store.pause('take', { times: 1 });
    const pending = track(h.provider.acquire(T('t1')));
    (await h.store.nextCall('take')).fail(new OwnershipBackendError('store down'));
    await expect(pending.promise).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(h.provider.tombstoneIds()).toEqual([id]);
    expect(h.provider.capacitySnapshot()).toMatchObject({ transitioning: 0, tombstones: 1 });
    // Shutdown kills it: nothing else would.
    await h.provider.shutdown();
    expect(h.fake.vms.get(id)!.alive).toBe(false);
  });

  it('leaves a warm VM whose eviction is in flight alone, though the eviction has not claimed it yet', async () => {
    const h = await withPeer({ config: reject });
    const a = await h.provider.acquire(T('a'));
    await h.provider.release(a);
    // Thread b at the cap evicts a; its del: claim is still on its way to the store.
    h.store.pause('claim', { times: 1 });
    const evicting = track(h.provider.acquire(T('b')));
    const claim = await h.store.nextCall('claim');
    const reclaimed = await h.provider.acquire(T('a')).catch((e: unknown) => e);
    expect(reclaimed).toBeInstanceOf(SandboxCapacityExceededError);
    await claim.release();
    const b = await evicting.promise;
    expect(h.provider.get(b)).toBeDefined();
    expect(h.provider.get(a)).toBeUndefined();
  });
});

describe('create', () => {
  it('a new VM whose take is refused (a reaper’s del: landed first) is not handed out', async () => {
    const h = await withPeer();
    h.store.pause('take', { times: 1 });
    const pending = track(h.provider.acquire(T('t1')));
    const take = await h.store.nextCall('take');
    const id = take.args[0] as string;
    expect(await h.peer.claim(id, { forDestroy: true })).toBe(true);
    await take.release();
    await expect(pending.promise).rejects.toBeInstanceOf(SandboxBeingDestroyedError);
    expect(h.provider.get(id)).toBeUndefined();
    expect(h.provider.capacitySnapshot()).toMatchObject({ reserved: 0, total: 0 });
  });

  it('a store error on a new VM’s take destroys the VM (no orphan) and frees the slot', async () => {
    const h = await withPeer();
    h.store.pause('take', { times: 1 });
    const pending = track(h.provider.acquire(T('t1')));
    const take = await h.store.nextCall('take');
    const id = take.args[0] as string;
    take.fail(new OwnershipBackendError('store down'));
    await expect(pending.promise).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(h.fake.vms.get(id)!.alive).toBe(false);
    expect(h.provider.capacitySnapshot()).toMatchObject({ reserved: 0, tombstones: 0, total: 0 });
    expect(h.provider.remoteOpIds()).toEqual([]);
  });
});

describe('discovery', () => {
  const seedThread = (h: Harness, thread: string) =>
    h.fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: thread,
      },
    });

  it('a store error on the take gives the slot and the in-flight mark back', async () => {
    const h = await withPeer();
    const vm = await seedThread(h, 't1');
    h.store.pause('take', { times: 1 });
    const pending = track(h.provider.acquire(T('t1')));
    (await h.store.nextCall('take')).fail(new OwnershipBackendError('store down'));
    await expect(pending.promise).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(h.provider.capacitySnapshot()).toMatchObject({ reserved: 0, total: 0 });
    expect(h.fake.vms.get(vm.sandboxId)!.alive).toBe(true);
    // Nothing of the failed attempt hides the VM: the next turn adopts it.
    expect(await h.provider.acquire(T('t1'))).toBe(vm.sandboxId);
  });

  it('shutdown during the bootstrap kills the VM it took instead of registering it', async () => {
    const h = await withPeer();
    const vm = await seedThread(h, 't1');
    h.fake.gate.pause('run', { times: 2 }); // the probe, then the bootstrap
    const pending = track(h.provider.acquire(T('t1')));
    await (await h.fake.gate.nextCall('run')).release();
    const bootstrap = await h.fake.gate.nextCall('run');
    const shutdown = h.provider.shutdown();
    await bootstrap.release();
    await expect(pending.promise).rejects.toBeInstanceOf(SandboxCapacityExceededError);
    await shutdown;
    expect(h.fake.vms.get(vm.sandboxId)!.alive).toBe(false);
    expect(h.provider.get(vm.sandboxId)).toBeUndefined();
    expect(await h.ownership.owner(vm.sandboxId)).toBeUndefined();
  });

  it('adopts a VM of the thread found by its tags, tracked in the ledger, and owns it', async () => {
    const h = await withPeer();
    const vm = await h.fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 't1',
      },
    });
    expect(await h.provider.acquire(T('t1'))).toBe(vm.sandboxId);
    expect(h.provider.ownsLease(vm.sandboxId)).toBe(true);
    expect(h.provider.remoteOpIds()).toEqual([]);
  });
});
