import { MemoryOwnershipStore } from '@sbx/core';
import { MemoryLeaseTable } from '@sbx/core/provider-kit';
import { ManualClock } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { E2B_TAGS } from './metadata.js';
import { makeHarness } from './test-support.js';
import type { Harness } from './test-support.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function harness(options: Parameters<typeof makeHarness>[0] = {}): Promise<Harness> {
  const h = await makeHarness(options);
  cleanups.push(h.cleanup);
  return h;
}
const tagged = (
  thread: string | undefined,
  createdAtSeconds: number,
  extra: Record<string, string> = {},
) => ({
  [E2B_TAGS.provider]: 'e2b_sandbox_provider',
  [E2B_TAGS.createdAt]: String(createdAtSeconds),
  ...(thread === undefined ? {} : { [E2B_TAGS.user]: 'u1', [E2B_TAGS.thread]: thread }),
  ...extra,
});
const START = 1_700_000_000_000;

describe('§8.3 reconciliation', () => {
  it('§8.3.94 a duplicate whose lease a live peer holds is deferred, not killed', async () => {
    const table = new MemoryLeaseTable();
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({
      ownership: new MemoryOwnershipStore({ table }),
      config: { e2b: { reconciliation_grace_seconds: 0 } },
    });
    await fake.seed({ metadata: tagged('t1', 1) });
    const dup = await fake.seed({ metadata: tagged('t1', 2) });
    await peer.take(dup.sandboxId);
    const stats = await provider.reconcileNow();
    expect(stats).toMatchObject({ duplicates: 1, killed: 0 });
    expect(fake.vms.get(dup.sandboxId)!.alive).toBe(true);
  });

  it('§8.3.94 an unowned duplicate is killed only after the grace period', async () => {
    const clock = new ManualClock(START);
    const { provider, fake } = await harness({
      clock,
      config: { e2b: { reconciliation_grace_seconds: 120 } },
    });
    const canonical = await fake.seed({ metadata: tagged('t1', 1) });
    const dup = await fake.seed({ metadata: tagged('t1', 2) });
    expect(await provider.reconcileNow()).toMatchObject({ duplicates: 1, killed: 0, adopted: 1 });
    await clock.advance(119_000);
    expect((await provider.reconcileNow()).killed).toBe(0);
    await clock.advance(2_000);
    expect((await provider.reconcileNow()).killed).toBe(1);
    expect(fake.vms.get(dup.sandboxId)!.alive).toBe(false);
    expect(fake.vms.get(canonical.sandboxId)!.alive).toBe(true);
  });

  it('§8.3.94 two reconcilers sharing one lease store kill a duplicate exactly once', async () => {
    const fake = new FakeE2BClient();
    cleanups.push(() => fake.dispose());
    const table = new MemoryLeaseTable();
    const a = await harness({
      fake,
      ownership: new MemoryOwnershipStore({ table }),
      config: { e2b: { reconciliation_grace_seconds: 0 } },
    });
    const b = await harness({
      fake,
      ownership: new MemoryOwnershipStore({ table }),
      config: { e2b: { reconciliation_grace_seconds: 0 } },
    });
    await fake.seed({ metadata: tagged('t1', 1) });
    const dup = await fake.seed({ metadata: tagged('t1', 2) });
    // Both list before either kills: hold the kill of the first until the second has listed too.
    fake.gate.pause('kill', { times: 1 });
    const first = a.provider.reconcileNow();
    const held = await fake.gate.nextCall('kill');
    const second = await b.provider.reconcileNow();
    await held.release();
    const one = await first;
    expect(one.killed + second.killed).toBe(1);
    expect(fake.callsOf('kill', dup.sandboxId).filter(() => true)).toHaveLength(1);
  });

  it('§8.3.95 item and page budgets stop the listing and mark the pass', async () => {
    const fake = new FakeE2BClient({ pageSize: 1 });
    cleanups.push(() => fake.dispose());
    for (let i = 0; i < 3; i++) await fake.seed({ metadata: tagged(`t${i}`, i) });
    const pages = await harness({ fake, config: { e2b: { reconciliation_max_pages: 2 } } });
    const byPages = await pages.provider.reconcileNow();
    expect(byPages).toMatchObject({ budgetExhausted: true, discovered: 2 });
    const items = await harness({ fake, config: { e2b: { reconciliation_max_items: 1 } } });
    expect(await items.provider.reconcileNow()).toMatchObject({
      budgetExhausted: true,
      discovered: 1,
    });
  });

  it('§8.3.95 the wall-clock budget stops listing and probing', async () => {
    const clock = new ManualClock(START);
    const fake = new FakeE2BClient({ pageSize: 1 });
    cleanups.push(() => fake.dispose());
    for (let i = 0; i < 3; i++) await fake.seed({ metadata: tagged(`t${i}`, i) });
    const { provider } = await harness({
      fake,
      clock,
      config: { e2b: { reconciliation_max_seconds: 5 } },
    });
    fake.gate.pause('list', { times: 1 });
    const pass = provider.reconcileNow();
    const page = await fake.gate.nextCall('list');
    await clock.advance(6_000);
    await page.release();
    const stats = await pass;
    expect(stats).toMatchObject({ budgetExhausted: true, discovered: 1, adopted: 0 });
    expect(fake.callsOf('connect')).toHaveLength(0);
  });

  it('§8.3.96 reconciliation adopts the canonical VM after a restart; the thread reclaims it', async () => {
    const { provider, fake } = await harness();
    const vm = await fake.seed({ metadata: tagged('t1', 1) });
    expect(await provider.reconcileNow()).toMatchObject({ adopted: 1 });
    expect(provider.ownsLease(vm.sandboxId)).toBe(true);
    expect(provider.warmIds()).toEqual([vm.sandboxId]);
    expect(await provider.acquire({ userId: 'u1', threadId: 't1' })).toBe(vm.sandboxId);
    expect(fake.callsOf('create')).toHaveLength(0);
  });

  it('a canonical VM a live peer leases is left to it without holding a slot; adopted once the lease is gone', async () => {
    const table = new MemoryLeaseTable();
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({ ownership: new MemoryOwnershipStore({ table }) });
    const vm = await fake.seed({ metadata: tagged('t1', 1) });
    await peer.take(vm.sandboxId);
    expect(await provider.reconcileNow()).toMatchObject({ adopted: 0, deferred: 1 });
    expect(provider.capacitySnapshot()).toMatchObject({ tombstones: 0, total: 0 });
    // The peer goes away (its lease lapses): the next pass adopts the VM rather than skipping it.
    await peer.release(vm.sandboxId);
    expect(await provider.reconcileNow()).toMatchObject({ adopted: 1 });
    expect(provider.warmIds()).toEqual([vm.sandboxId]);
    expect(fake.callsOf('kill')).toHaveLength(0);
  });

  it('§8.3.97 a canonical adoption whose bootstrap fails after a peer take cleans up without killing', async () => {
    const table = new MemoryLeaseTable();
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({ ownership: new MemoryOwnershipStore({ table }) });
    const vm = await fake.seed({ metadata: tagged('t1', 1) });
    fake.gate.pause('run', { times: 2 });
    const pass = provider.reconcileNow();
    await (await fake.gate.nextCall('run')).release(); // probe
    const bootstrap = await fake.gate.nextCall('run');
    await peer.take(vm.sandboxId);
    bootstrap.fail(new Error('bootstrap boom'));
    expect(await pass).toMatchObject({ adopted: 0 });
    expect(fake.callsOf('kill', vm.sandboxId)).toHaveLength(0);
    expect(fake.callsOf('close', vm.sandboxId).length).toBeGreaterThan(0);
    expect((await peer.owner(vm.sandboxId))?.ownerId).toBe(peer.ownerId);
    expect(provider.capacitySnapshot()).toMatchObject({ reserved: 0, tombstones: 0, total: 0 });
    expect(provider.remoteOpIds()).toEqual([]);
    // the intent mark is gone: renewal may forget what it does not own
    expect(provider.ownsLease(vm.sandboxId)).toBe(false);
  });

  it('§8.3.98 a metadata orphan is killed only after the orphan TTL', async () => {
    const clock = new ManualClock(START);
    const { provider, fake } = await harness({
      clock,
      config: { e2b: { reconciliation_orphan_ttl_seconds: 3600 } },
    });
    const orphan = await fake.seed({ metadata: tagged(undefined, START / 1000) });
    expect((await provider.reconcileNow()).killed).toBe(0);
    await clock.advance(3_599_000);
    expect((await provider.reconcileNow()).killed).toBe(0);
    await clock.advance(2_000);
    expect((await provider.reconcileNow()).killed).toBe(1);
    expect(fake.vms.get(orphan.sandboxId)!.alive).toBe(false);
  });

  it('a VM prepared for another skills root is never adopted and is reaped after the grace', async () => {
    const clock = new ManualClock(START);
    const { provider, fake } = await harness({
      clock,
      config: { e2b: { reconciliation_grace_seconds: 10 } },
    });
    const foreign = await fake.seed({
      metadata: tagged('t1', 1, { [E2B_TAGS.skillsRoot]: '/opt/skills' }),
    });
    expect(await provider.reconcileNow()).toMatchObject({ adopted: 0, duplicates: 1, killed: 0 });
    await clock.advance(11_000);
    expect((await provider.reconcileNow()).killed).toBe(1);
    expect(fake.vms.get(foreign.sandboxId)!.alive).toBe(false);
  });

  it('a thread-less sandbox that is active here is never reaped as an orphan', async () => {
    const clock = new ManualClock(START);
    const { provider, fake } = await harness({
      clock,
      config: { e2b: { reconciliation_orphan_ttl_seconds: 0 } },
    });
    const id = await provider.acquire();
    expect((await provider.reconcileNow()).killed).toBe(0);
    expect(fake.vms.get(id)!.alive).toBe(true);
  });
});
