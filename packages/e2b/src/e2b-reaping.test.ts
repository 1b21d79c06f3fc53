import { MemoryCapacityStore } from '@sbx/core';
import type { CapacityStore } from '@sbx/core';
import { ManualClock, pausable, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { E2B_TAGS } from './metadata.js';
import { makeHarness, sharedLeases } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';

// The reapers of one instance (reconciliation and `reapOrphans`) kill an untracked VM under a
// claimed `del:` marker. Our claim over our own `own:` lease is granted, so the one thing that
// keeps a reaper off a VM this instance has just taken up is the local bookkeeping: the reaper
// checks "still untracked" right before its claim, and the acquire and adoption paths check the
// reaping set right before they mark the VM theirs, each in one synchronous step.

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
const tagged = (thread: string | undefined, createdAtSeconds: number) => ({
  [E2B_TAGS.provider]: 'e2b_sandbox_provider',
  [E2B_TAGS.createdAt]: String(createdAtSeconds),
  ...(thread === undefined ? {} : { [E2B_TAGS.user]: 'u1', [E2B_TAGS.thread]: thread }),
});
const noGrace = {
  e2b: { reconciliation_grace_seconds: 0, reconciliation_orphan_ttl_seconds: 0 },
};

/** A provider on a pausable store (its `claim` can be held on its way to the store). */
async function pausableHarness(options: HarnessOptions = {}) {
  const clock = new ManualClock(1_700_000_000_000);
  const { mine } = sharedLeases(clock);
  const store = pausable(mine);
  const h = await harness({ config: noGrace, ...options, clock, ownership: store.proxy });
  return { ...h, store };
}

/**
 * Thread t1's canonical VM and a younger duplicate; `reapOrphans` decides to kill the duplicate
 * and its `del:` claim is held on the way to the store. Then the canonical VM dies, so the
 * thread's next turn (or the next pass) finds the duplicate.
 */
async function duplicateBeingReaped(h: Awaited<ReturnType<typeof pausableHarness>>) {
  const canonical = await h.fake.seed({ metadata: tagged('t1', 1) });
  const dup = await h.fake.seed({ metadata: tagged('t1', 2) });
  h.store.pause('claim', { times: 1 });
  const report = track(h.provider.reapOrphans({ waitForGrace: false }));
  const claim = await h.store.nextCall('claim');
  expect(claim.args[0]).toBe(dup.sandboxId);
  h.fake.reap(canonical.sandboxId);
  return { dup: dup.sandboxId, report, claim };
}

describe('reaping against this instance’s own acquires', () => {
  it('an acquire does not adopt a VM this instance is reaping, though its del: claim has not landed', async () => {
    const h = await pausableHarness();
    const { dup, report, claim } = await duplicateBeingReaped(h);
    const id = await h.provider.acquire(T('t1'));
    await claim.release();
    await report.promise;
    // Whatever the acquire handed out is alive and tracked; the duplicate was not it.
    expect(id).not.toBe(dup);
    expect(h.fake.vms.get(id)!.alive).toBe(true);
    expect(h.provider.get(id)).toBeDefined();
  });

  it('a pass does not adopt a VM this instance is reaping, though its del: claim has not landed', async () => {
    const h = await pausableHarness();
    const { report, claim } = await duplicateBeingReaped(h);
    await h.provider.reconcileNow();
    await claim.release();
    await report.promise;
    // Nothing parked here is a VM the reaper killed.
    for (const id of h.provider.warmIds()) expect(h.fake.vms.get(id)!.alive).toBe(true);
  });

  it('checks again, right before claiming, that the VM is still untracked: an acquire adopted it meanwhile', async () => {
    const h = await pausableHarness();
    const canonical = await h.fake.seed({ metadata: tagged('t1', 1) });
    const orphan = await h.fake.seed({ metadata: tagged(undefined, 1) });
    const dup = await h.fake.seed({ metadata: tagged('t1', 2) });
    // reapOrphans decides on every VM, then kills the orphan first: hold that kill.
    h.fake.gate.pause('kill', { times: 1 });
    const report = track(h.provider.reapOrphans({ waitForGrace: false }));
    const kill = await h.fake.gate.nextCall('kill');
    expect(kill.args[0]).toBe(orphan.sandboxId);
    // Meanwhile the canonical VM dies and the thread's turn adopts the duplicate.
    h.fake.reap(canonical.sandboxId);
    expect(await h.provider.acquire(T('t1'))).toBe(dup.sandboxId);
    await kill.release();
    const { reaped, kept } = await report.promise;
    expect(reaped).toEqual([orphan.sandboxId]);
    expect(kept).toContainEqual({ id: dup.sandboxId, reason: 'active in this instance' });
    expect(h.fake.vms.get(dup.sandboxId)!.alive).toBe(true);
  });

  it('keeps a VM this instance tracks at once, whatever its age, without waiting out a grace', async () => {
    const h = await harness();
    const anonymous = await h.provider.acquire(); // an orphan by its tags, young by its TTL
    expect(await h.provider.reapOrphans({ waitForGrace: false })).toEqual({
      reaped: [],
      kept: [{ id: anonymous, reason: 'active in this instance' }],
    });
  });

  it('two reapers of one instance kill one VM once', async () => {
    const h = await harness({ config: noGrace });
    const orphan = await h.fake.seed({ metadata: tagged(undefined, 1) });
    h.fake.gate.pause('kill', { times: 1 });
    const first = track(h.provider.reapOrphans({ waitForGrace: false }));
    const kill = await h.fake.gate.nextCall('kill');
    const second = await h.provider.reapOrphans({ waitForGrace: false });
    expect(second).toEqual({
      reaped: [],
      kept: [{ id: orphan.sandboxId, reason: 'being reaped by this instance already' }],
    });
    await kill.release();
    expect((await first.promise).reaped).toEqual([orphan.sandboxId]);
    expect(h.fake.callsOf('kill', orphan.sandboxId)).toHaveLength(1);
  });

  it('a kill E2B does not confirm keeps the ledger slot (left to reconciliation)', async () => {
    const inner = new MemoryCapacityStore({ hardLimit: 5 });
    await inner.reconcile({
      expectedRevision: await inner.revision(),
      entries: [],
      complete: true,
      maxAgeMs: 120_000,
    });
    const released: string[] = [];
    const ledger: CapacityStore = {
      hardLimit: inner.hardLimit,
      revision: () => inner.revision(),
      reserve: (token) => inner.reserve(token),
      track: (id, token) => inner.track(id, token),
      release: (id) => (released.push(id), inner.release(id)),
      reconcile: (inventory) => inner.reconcile(inventory),
      close: () => inner.close(),
    };
    const h = await harness({ config: noGrace, capacity: ledger });
    const orphan = await h.fake.seed({ metadata: tagged(undefined, 1) });
    h.fake.gate.pause('kill', { times: 1 });
    const report = track(h.provider.reapOrphans({ waitForGrace: false }));
    const kill = await h.fake.gate.nextCall('kill');
    h.fake.reap(orphan.sandboxId); // gone by the time the kill arrives: E2B answers "not killed"
    await kill.release();
    expect((await report.promise).kept).toEqual([
      {
        id: orphan.sandboxId,
        reason:
          'E2B did not confirm the kill (it may already be gone); its ledger slot is left to reconciliation',
      },
    ]);
    expect(released).toEqual([]);
  });
});
