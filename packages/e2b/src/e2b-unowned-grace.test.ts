import { OwnershipBackendError } from '@sbx/core';
import type { OwnershipStore } from '@sbx/core';
import { ManualClock } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { E2B_TAGS } from './metadata.js';
import { makeHarness, sharedLeases } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

// The lease grace (core's `leaseGraceVerdict`): on a store that shows peers' leases, an untracked
// VM is adopted or killed only once seen unowned for a whole lease TTL. A store flush (or restart
// without data) erases every lease at once; each live gateway re-claims its own within one
// renewal interval, shorter than the TTL, so the flush costs live sandboxes nothing, while the
// VMs of a crashed gateway are adopted one TTL after its leases lapsed.

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

/** Gateways A and B on one E2B account and one lease store that shows each other's leases. */
async function twoGateways(config: Record<string, unknown> = {}) {
  const clock = new ManualClock(1_700_000_000_000);
  const fake = new FakeE2BClient();
  cleanups.push(() => fake.dispose());
  const { table, mine, peer } = sharedLeases(clock, { visible: true });
  const a = await harness({ clock, fake, ownership: mine, config });
  const b = await harness({ clock, fake, ownership: peer, config });
  const ttlMs = b.provider.ownership.leaseTtlSeconds * 1000;
  const intervalMs = a.provider.ownership.renewalIntervalSeconds * 1000;
  /** One lease TTL passes while A, alive, renews on its interval. */
  const aRenewsForOneTtl = async () => {
    for (let waited = 0; waited < ttlMs; waited += intervalMs) {
      await clock.advance(intervalMs);
      await a.provider.renewLeases();
    }
  };
  return { clock, fake, table, a, b, ttlMs, aRenewsForOneTtl };
}

describe('the lease grace', () => {
  it('right after a flush, a peer’s pass adopts none of a live gateway’s VMs', async () => {
    const { table, a, b, aRenewsForOneTtl } = await twoGateways();
    const busy = await a.provider.acquire(T('busy'));
    const parked = await a.provider.acquire(T('parked'));
    await a.provider.release(parked);
    table.clear(); // the flush
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 0 });
    // A's renewal re-claims both within its interval, so B's later passes see them owned.
    await aRenewsForOneTtl();
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 0 });
    expect(b.provider.warmIds()).toEqual([]);
    expect(a.provider.get(busy)).toBeDefined();
    expect(a.provider.warmIds()).toEqual([parked]);
    expect((await a.ownership.owner(busy))?.ownerId).toBe(a.ownership.ownerId);
    expect(await a.provider.get(busy)!.executeCommand('echo mine')).toContain('mine');
  });

  it('right after a flush, a peer’s pass kills no VM a live gateway is using', async () => {
    const { fake, table, a, b, aRenewsForOneTtl } = await twoGateways({
      e2b: { reconciliation_grace_seconds: 0, reconciliation_orphan_ttl_seconds: 0 },
    });
    // A thread-less sandbox in use (an orphan by its tags), and a thread's VM in use that B
    // counts as a duplicate (another VM of the thread has an older creation tag).
    const anonymous = await a.provider.acquire();
    const newer = await a.provider.acquire(T('t1'));
    await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.createdAt]: '1',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 't1',
      },
    });
    table.clear();
    expect(await b.provider.reconcileNow()).toMatchObject({ killed: 0 });
    expect((await b.provider.reapOrphans({ waitForGrace: false })).reaped).toEqual([]);
    await aRenewsForOneTtl();
    expect(await b.provider.reconcileNow()).toMatchObject({ killed: 0 });
    for (const id of [anonymous, newer]) {
      expect(fake.vms.get(id)!.alive).toBe(true);
      expect(a.provider.get(id)).toBeDefined();
    }
  });

  it('a crashed gateway’s VM is adopted once seen unowned for a whole lease TTL', async () => {
    const { clock, table, a, b, ttlMs } = await twoGateways();
    const id = await a.provider.acquire(T('t1'));
    await a.provider.release(id);
    table.expire(id); // A crashed: its lease lapsed, nobody re-claims it
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 0 });
    await clock.advance(ttlMs - 1);
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 0 });
    await clock.advance(1);
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 1 });
    expect(b.provider.warmIds()).toEqual([id]);
  });

  it('a VM adopted, then taken by a peer, waits a whole TTL again after a flush (no stale sighting)', async () => {
    const { clock, table, a, b, ttlMs, aRenewsForOneTtl } = await twoGateways();
    const id = await a.provider.acquire(T('t1'));
    await a.provider.release(id);
    table.expire(id);
    await b.provider.reconcileNow();
    await clock.advance(ttlMs);
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 1 });
    // The thread's next turn lands on A, which takes the VM back; B forgets it on renewal.
    expect(await a.provider.acquire(T('t1'))).toBe(id);
    await b.provider.renewLeases();
    expect(b.provider.warmIds()).toEqual([]);
    table.clear();
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 0 });
    await aRenewsForOneTtl();
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 0 });
    expect(a.provider.get(id)).toBeDefined();
  });

  it('time the store was down does not count: after a flush and an outage past the TTL, the first look adopts nothing', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const fake = new FakeE2BClient();
    cleanups.push(() => fake.dispose());
    const { table, mine, peer } = sharedLeases(clock, { visible: true });
    const outage = { down: false };
    const failing = (inner: OwnershipStore): OwnershipStore => {
      const call =
        <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
        (...args: A): Promise<R> =>
          outage.down ? Promise.reject(new OwnershipBackendError('store down')) : fn(...args);
      return {
        get ownerId() {
          return inner.ownerId;
        },
        supportsCrossProcess: true,
        take: call((id) => inner.take(id)),
        claim: call((id, options) => inner.claim(id, options)),
        renew: call((id) => inner.renew(id)),
        release: call((id) => inner.release(id)),
        owner: call((id) => inner.owner(id)),
        close: () => inner.close(),
      };
    };
    const a = await harness({ clock, fake, ownership: mine });
    const b = await harness({ clock, fake, ownership: failing(peer) });
    const ttlMs = b.provider.ownership.leaseTtlSeconds * 1000;
    const busy = await a.provider.acquire(T('busy'));
    await b.provider.acquire(T('b-own')); // B holds a lease: its renewal meets the outage
    table.clear();
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 0 }); // first seen unowned
    await clock.advance(1_000);
    outage.down = true;
    await b.provider.renewLeases(); // fails: B knows the store was down
    await clock.advance(ttlMs);
    outage.down = false;
    // The first look after recovery, before A's renewal could re-claim: not a whole TTL answered.
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 0 });
    await a.provider.renewLeases();
    expect(a.provider.get(busy)).toBeDefined();
    expect((await a.ownership.owner(busy))?.ownerId).toBe(a.ownership.ownerId);
  });

  it('sbx gc right after a flush keeps a VM whose owner has not re-claimed it yet, with the reason', async () => {
    const { table, a, b } = await twoGateways({
      e2b: { reconciliation_orphan_ttl_seconds: 0 },
    });
    const anonymous = await a.provider.acquire();
    table.clear();
    const report = await b.provider.reapOrphans({ waitForGrace: false });
    expect(report.reaped).toEqual([]);
    expect(report.kept).toEqual([
      {
        id: anonymous,
        reason: expect.stringContaining('unowned for less than the 120 s lease TTL'),
      },
    ]);
  });

  it('an untracked VM whose lease this instance holds is no peer’s: adopted without waiting', async () => {
    const { fake, b } = await twoGateways();
    const vm = await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.createdAt]: '1',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 't1',
      },
    });
    await b.provider.ownerId();
    expect(await b.ownership.take(vm.sandboxId)).toBe(true);
    expect(await b.provider.reconcileNow()).toMatchObject({ adopted: 1 });
    expect(b.provider.warmIds()).toEqual([vm.sandboxId]);
  });
});
