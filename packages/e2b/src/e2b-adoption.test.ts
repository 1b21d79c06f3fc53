import { MemoryCapacityStore, SandboxCapacityExceededError } from '@sbx/core';
import { ManualClock, pausable, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { E2B_TAGS } from './metadata.js';
import { makeHarness, sharedLeases } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';

// Reconciliation adopts a thread's canonical VM into the warm pool. An adoption spans several
// round trips (ledger track, claim, bootstrap, timeout); whatever happens meanwhile (an acquire of
// the same thread, a peer's take, shutdown, an acquire racing for the last slot) must leave one VM
// per thread, every tracked VM under renewal and the capacity limit intact; and a failed adoption
// gives back its slot, its intent mark and its lease.

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
const tagged = (thread: string) => ({
  [E2B_TAGS.provider]: 'e2b_sandbox_provider',
  [E2B_TAGS.createdAt]: '1',
  [E2B_TAGS.user]: 'u1',
  [E2B_TAGS.thread]: thread,
});

/** A provider and a peer gateway's store on one lease table. */
async function withPeer(options: HarnessOptions = {}) {
  const clock = new ManualClock(1_700_000_000_000);
  const { mine, peer, table } = sharedLeases(clock);
  const h = await harness({ ...options, clock, ownership: mine });
  return { ...h, peer, table };
}

/** A pass whose adoption of `vmId` is held at its bootstrap (the probe has passed). */
async function adoptionAtBootstrap(h: Harness) {
  h.fake.gate.pause('run', { times: 2 });
  const pass = track(h.provider.reconcileNow());
  await (await h.fake.gate.nextCall('run')).release(); // the liveness probe
  const bootstrap = await h.fake.gate.nextCall('run');
  return { pass, bootstrap };
}

describe('adoption by reconciliation', () => {
  it('adopts nothing beyond the local capacity limit', async () => {
    const h = await harness({ config: { replicas: 1 } });
    await h.provider.acquire(T('a'));
    const vm = await h.fake.seed({ metadata: tagged('b') });
    expect(await h.provider.reconcileNow()).toMatchObject({ adopted: 0, deferred: 1 });
    expect(h.provider.warmIds()).toEqual([]);
    expect(h.provider.capacitySnapshot()).toMatchObject({ total: 1, reserved: 0 });
    expect(h.fake.vms.get(vm.sandboxId)!.alive).toBe(true);
  });

  it('an acquire racing an adoption for the last slot: the limit holds', async () => {
    const ledger = pausable(new MemoryCapacityStore({ hardLimit: 5 }));
    await ledger.proxy.reconcile({
      expectedRevision: await ledger.proxy.revision(),
      entries: [],
      complete: true,
      maxAgeMs: 120_000,
    });
    const h = await harness({
      config: { replicas: 1, overflow_policy: 'reject' },
      capacity: ledger.proxy,
    });
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    // The adoption has counted the slot free and is tracking the VM in the ledger...
    ledger.pause('track', { times: 1 });
    const pass = track(h.provider.reconcileNow());
    const tracking = await ledger.nextCall('track');
    // ...when another thread's turn asks for a slot.
    const other = await h.provider.acquire(T('t2')).catch((e: unknown) => e);
    await tracking.release();
    await pass.promise;
    const { active, warm, total } = h.provider.capacitySnapshot();
    expect(active + warm).toBeLessThanOrEqual(1);
    expect(total).toBeLessThanOrEqual(1);
    expect(other).toBeInstanceOf(SandboxCapacityExceededError);
    expect(h.provider.warmIds()).toEqual([vm.sandboxId]);
  });

  it('keeps the VM it is adopting under renewal: a peer’s take meanwhile is forgotten on the next renewal, not left parked without a lease', async () => {
    const h = await withPeer();
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    const { pass, bootstrap } = await adoptionAtBootstrap(h);
    await h.peer.take(vm.sandboxId); // the thread's turn landed on the peer
    await h.provider.renewLeases(); // LOST, but the adoption is in flight: not forgotten yet
    await bootstrap.release();
    expect(await pass.promise).toMatchObject({ adopted: 1 });
    // Every VM this instance parks is one its renewal looks at...
    for (const id of h.provider.warmIds()) expect(h.provider.ownsLease(id)).toBe(true);
    // ...so the next renewal hears the peer's lease and forgets the VM, untouched.
    await h.provider.renewLeases();
    expect(h.provider.warmIds()).toEqual([]);
    expect(h.fake.callsOf('kill', vm.sandboxId)).toHaveLength(0);
  });

  it('ends its intent mark: a VM adopted and then taken by a peer is forgotten on renewal', async () => {
    const h = await withPeer();
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    expect(await h.provider.reconcileNow()).toMatchObject({ adopted: 1 });
    await h.peer.take(vm.sandboxId);
    await h.provider.renewLeases();
    // Still parked here, a reclaim would take the VM back from the peer in the middle of its turn.
    expect(h.provider.warmIds()).toEqual([]);
    expect(h.provider.ownsLease(vm.sandboxId)).toBe(false);
  });

  it('a thread that got an active VM meanwhile keeps it; the adopted one gives its lease up and is not parked', async () => {
    const h = await withPeer();
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    const { pass, bootstrap } = await adoptionAtBootstrap(h);
    // The thread's turn: discovery skips the VM in flight here, so it creates one.
    const created = await h.provider.acquire(T('t1'));
    expect(created).not.toBe(vm.sandboxId);
    await bootstrap.release();
    expect(await pass.promise).toMatchObject({ adopted: 0 });
    expect(h.provider.warmIds()).toEqual([]);
    expect(h.provider.get(created)).toBeDefined();
    expect(h.provider.ownsLease(vm.sandboxId)).toBe(false);
    expect(await h.ownership.owner(vm.sandboxId)).toBeUndefined();
    expect(h.fake.vms.get(vm.sandboxId)!.alive).toBe(true); // a later pass reaps it as a duplicate
    expect(h.provider.capacitySnapshot()).toMatchObject({ reserved: 0, active: 1, total: 1 });
  });

  it('a thread that got a warm VM meanwhile keeps it; the adopted one is not parked beside it', async () => {
    const h = await withPeer();
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    const { pass, bootstrap } = await adoptionAtBootstrap(h);
    const created = await h.provider.acquire(T('t1'));
    await h.provider.release(created);
    await bootstrap.release();
    expect(await pass.promise).toMatchObject({ adopted: 0 });
    expect(h.provider.warmIds()).toEqual([created]);
    expect(await h.ownership.owner(vm.sandboxId)).toBeUndefined();
  });

  it('a bootstrap that fails and a kill that fails keep the slot as a tombstone', async () => {
    const h = await harness();
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    const { pass, bootstrap } = await adoptionAtBootstrap(h);
    h.fake.fail('kill', new Error('kill failed'), { sandboxId: vm.sandboxId });
    bootstrap.fail(new Error('bootstrap boom'));
    expect(await pass.promise).toMatchObject({ adopted: 0 });
    expect(h.provider.tombstoneIds()).toEqual([vm.sandboxId]);
    expect(h.provider.capacitySnapshot()).toMatchObject({ reserved: 0, tombstones: 1, total: 1 });
  });

  it('shutdown during the adoption’s bootstrap kills the VM it claimed instead of parking it', async () => {
    const h = await harness();
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    const { pass, bootstrap } = await adoptionAtBootstrap(h);
    const shutdown = h.provider.shutdown();
    await bootstrap.release();
    expect(await pass.promise).toMatchObject({ adopted: 0 });
    await shutdown;
    expect(h.fake.vms.get(vm.sandboxId)!.alive).toBe(false);
    expect(h.provider.warmIds()).toEqual([]);
    expect(await h.ownership.owner(vm.sandboxId)).toBeUndefined();
  });

  it('shutdown during a pass’s liveness probe: the pass adopts nothing and kills nothing', async () => {
    const h = await harness();
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    h.fake.gate.pause('run', { times: 1 });
    const pass = track(h.provider.reconcileNow());
    const probe = await h.fake.gate.nextCall('run');
    const shutdown = h.provider.shutdown();
    await probe.release();
    expect(await pass.promise).toMatchObject({ adopted: 0 });
    await shutdown;
    expect(h.fake.vms.get(vm.sandboxId)!.alive).toBe(true);
    expect(h.fake.callsOf('kill')).toHaveLength(0);
    expect(await h.ownership.owner(vm.sandboxId)).toBeUndefined();
  });

  it('a pass after shutdown lists nothing, adopts nothing and kills nothing', async () => {
    const h = await harness({ config: { e2b: { reconciliation_orphan_ttl_seconds: 0 } } });
    await h.fake.seed({ metadata: tagged('t1') });
    await h.fake.seed({ metadata: { [E2B_TAGS.provider]: 'e2b_sandbox_provider' } });
    await h.provider.shutdown();
    const lists = h.fake.callsOf('list').length;
    expect(await h.provider.reconcileNow()).toMatchObject({ discovered: 0, adopted: 0, killed: 0 });
    expect(h.fake.callsOf('list')).toHaveLength(lists);
    expect(h.fake.callsOf('kill')).toHaveLength(0);
  });
});
