import { MemoryCapacityStore, MemoryOwnershipStore } from '@sbx/core';
import { MemoryLeaseTable } from '@sbx/core/provider-kit';
import { pausable, settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { E2B_TAGS } from './metadata.js';
import { makeHarness } from './test-support.js';
import { sdkError } from './testing/fake-e2b-errors.js';
import type { Harness } from './test-support.js';

// Bugs found where the provider's paths meet (issue #16), each pinned by the interleaving that
// produced it: the test fails on the code before the fix.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function harness(options: Parameters<typeof makeHarness>[0] = {}): Promise<Harness> {
  const h = await makeHarness(options);
  cleanups.push(h.cleanup);
  return h;
}
const T = (threadId: string) => ({ userId: 'u1', threadId });
const tagged = (thread: string, createdAtSeconds: number) => ({
  [E2B_TAGS.provider]: 'e2b_sandbox_provider',
  [E2B_TAGS.createdAt]: String(createdAtSeconds),
  [E2B_TAGS.user]: 'u1',
  [E2B_TAGS.thread]: thread,
});

describe('reconciliation racing an acquire (#16 bug 1)', () => {
  it('an acquire does not adopt a VM reconciliation is still bootstrapping; the VM it hands out keeps its lease', async () => {
    const h = await harness({ config: { e2b: { reconciliation_grace_seconds: 0 } } });
    const previous = await h.fake.seed({ metadata: tagged('t1', 1) });
    // Reconciliation probes the VM (a `true`), claims it, then runs the bootstrap: hold that.
    h.fake.gate.pause('run', { times: 2 });
    const pass = track(h.provider.reconcileNow());
    await (await h.fake.gate.nextCall('run')).release();
    const bootstrap = await h.fake.gate.nextCall('run');
    // The thread's first turn after the restart lands now.
    const id = await h.provider.acquire(T('t1'));
    await bootstrap.release();
    await pass.promise;
    const owner = await h.ownership.owner(id);
    expect(owner?.ownerId).toBe(h.ownership.ownerId);
    expect(h.provider.get(id)).toBeDefined();
    expect(h.fake.vms.get(id)!.alive).toBe(true);
    expect(previous.sandboxId).toBeDefined();
  });
});

describe('shutdown after a failed kill (#16 bug 2)', () => {
  it('shutdown kills a warm VM whose eviction kill failed, not leaving it to its E2B timeout', async () => {
    const h = await harness({ config: { replicas: 1, overflow_policy: 'reject' } });
    const first = await h.provider.acquire(T('t1'));
    await h.provider.release(first); // parked warm
    h.fake.fail('kill', sdkError('SandboxError', 'kill failed'), { times: 1 });
    // A second thread at the cap evicts the warm VM; its kill fails.
    const second = await h.provider.acquire(T('t2')).catch(() => undefined);
    expect(h.fake.vms.get(first)!.alive).toBe(true);
    await h.provider.shutdown();
    expect(h.fake.vms.get(first)!.alive).toBe(false);
    if (second !== undefined) expect(h.fake.vms.get(second)!.alive).toBe(false);
  });

  it('shutdown kills a tombstone: a new VM whose bootstrap failed and whose kill failed', async () => {
    const h = await harness();
    h.fake.fail('run', sdkError('SandboxError', 'bootstrap failed'), { times: 1 });
    h.fake.fail('kill', sdkError('SandboxError', 'kill failed'), { times: 1 });
    await expect(h.provider.acquire(T('t1'))).rejects.toThrow();
    const [tombstone] = [...h.fake.vms.values()].filter((vm) => vm.alive);
    expect(tombstone).toBeDefined();
    await h.provider.shutdown();
    expect(tombstone!.alive).toBe(false);
  });
});

describe('guards where a round trip lets other paths in (#16 item 6)', () => {
  it('renewal hearing LOST while an acquire publishes does not forget the sandbox being handed out', async () => {
    const table = new MemoryLeaseTable();
    const store = pausable(new MemoryOwnershipStore({ table }));
    const h = await harness({ ownership: store.proxy });
    const id = await h.provider.acquire(T('t1'));
    const inUse = h.provider.get(id)!;
    // A peer took the lease over (a turn it served); this instance's next turn re-publishes.
    await new MemoryOwnershipStore({ table }).take(id);
    store.pause('take', { times: 1 });
    const again = track(h.provider.acquire(T('t1')));
    const take = await store.nextCall('take');
    await h.provider.renewLeases(); // hears LOST: the peer's lease, before our take lands
    await take.release();
    expect(await again.promise).toBe(id);
    expect(h.provider.get(id)).toBe(inUse);
    expect(await inUse.executeCommand('echo still-open')).toContain('still-open');
  });

  it('discovery adopts neither a VM prepared for another skills root nor one of another capacity ledger', async () => {
    const cap = new MemoryCapacityStore({ hardLimit: 5 });
    await cap.reconcile({
      expectedRevision: await cap.revision(),
      entries: [],
      complete: true,
      maxAgeMs: 120_000,
    });
    const h = await harness({ capacity: cap, config: { replicas: 5 } });
    const otherRoot = await h.fake.seed({
      metadata: { ...tagged('t1', 1), [E2B_TAGS.skillsRoot]: '/opt/skills' },
    });
    const otherLedger = await h.fake.seed({
      metadata: { ...tagged('t2', 1), [E2B_TAGS.capacityLedger]: 'other:e2b-capacity' },
    });
    const one = await h.provider.acquire(T('t1'));
    const two = await h.provider.acquire(T('t2'));
    expect(one).not.toBe(otherRoot.sandboxId);
    expect(two).not.toBe(otherLedger.sandboxId);
  });
});

describe('the SDK pool (#16 item 6)', () => {
  it('bounds how many SDK calls run at once, whatever the number of acquires', async () => {
    const h = await harness({ config: { replicas: 3, overflow_policy: 'reject' } });
    const limit = h.provider.settings.sdkConcurrency;
    const threads = Array.from({ length: limit + 4 }, (_, i) => `p${i}`);
    for (const t of threads) await h.fake.seed({ metadata: tagged(t, 1) });
    h.fake.gate.pause('connect');
    const acquires = threads.map((t) => h.provider.acquire(T(t)).catch(() => undefined));
    await expect.poll(() => h.fake.gate.waiting('connect'), { timeout: 60_000 }).toBe(limit);
    await settle(); // more turns of the loop: nothing else gets in
    expect(h.fake.gate.waiting('connect')).toBe(limit);
    h.fake.gate.resume('connect');
    await h.fake.gate.releaseAll();
    await Promise.all(acquires);
  });
});

describe('one lifecycle contract: events (#16)', () => {
  it('reports every acquire path, adoptions, reaps and ownership-store failures', async () => {
    const store = pausable(new MemoryOwnershipStore());
    const h = await harness({
      ownership: store.proxy,
      config: { e2b: { reconciliation_grace_seconds: 0 } },
    });
    const events: string[] = [];
    h.provider.onEvent((e) =>
      events.push(
        e.type === 'acquire'
          ? `acquire:${e.path}`
          : e.type === 'reap'
            ? `reap:${e.reason}`
            : e.type,
      ),
    );
    const id = await h.provider.acquire(T('t1'));
    await h.provider.acquire(T('t1'));
    await h.provider.release(id);
    await h.provider.acquire(T('t1'));
    await h.fake.seed({ metadata: tagged('t2', 1) });
    await h.provider.acquire(T('t2'));
    await h.fake.seed({ metadata: tagged('t3', 1) });
    await h.fake.seed({ metadata: tagged('t3', 2) });
    await h.provider.reconcileNow();
    store.pause('renew', { times: 1 });
    const renewal = track(h.provider.renewLeases());
    await (await store.nextCall('renew')).fail(new Error('store down'));
    await renewal.promise;
    expect(events).toEqual([
      'acquire:create',
      'acquire:reuse',
      'acquire:reclaim',
      'acquire:discover',
      'adopt',
      'reap:duplicate',
      'ownership-error',
    ]);
  });
});
