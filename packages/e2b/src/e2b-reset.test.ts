import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ProviderClosedError, parseSandboxConfig } from '@sbx/core';
import { ManualClock, pausable, settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { E2BSandboxProvider } from './e2b-sandbox-provider.js';
import { E2B_TAGS } from './metadata.js';
import { makeHarness, sharedLeases } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

// reset() hands everything over to a replacement without killing a VM. What it must not hand
// over: the `del:` marker of a kill still in flight here. What it must not leave behind: a VM an
// acquire, a release, an adoption or a renewal in flight installs (or re-leases) after the
// hand-over, whose lease nothing would renew or give up; so it lets them finish first, and they
// finish as they would have without it, not by killing what they made (that is shutdown's way).

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
const tagged = (thread: string | undefined, createdAtSeconds = 1) => ({
  [E2B_TAGS.provider]: 'e2b_sandbox_provider',
  [E2B_TAGS.createdAt]: String(createdAtSeconds),
  ...(thread === undefined ? {} : { [E2B_TAGS.user]: 'u1', [E2B_TAGS.thread]: thread }),
});

/** A provider and a peer gateway's store on one lease table. */
async function withPeer(options: HarnessOptions = {}) {
  const clock = new ManualClock(1_700_000_000_000);
  const { mine, peer } = sharedLeases(clock);
  const h = await harness({ ...options, clock, ownership: mine });
  return { ...h, peer };
}

/** Starts reset() and checks it waits for the held operation (it has not settled). */
async function resetWaiting(h: Harness) {
  const reset = track(h.provider.reset());
  await settle();
  expect(reset.settled).toBe(false);
  return reset;
}

/** After the hand-over: the VM runs on, untracked here, its lease given up (a peer takes it now). */
async function handedOver(
  h: Harness & { peer: { take(id: string): Promise<boolean> } },
  id: string,
) {
  expect(h.fake.vms.get(id)!.alive).toBe(true);
  expect(h.fake.callsOf('kill', id)).toHaveLength(0);
  expect(h.provider.get(id)).toBeUndefined();
  expect(h.provider.warmIds()).toEqual([]);
  expect(await h.ownership.owner(id)).toBeUndefined();
  expect(h.provider.ownsLease(id)).toBe(false);
  expect(await h.peer.take(id)).toBe(true);
}

describe('reset()', () => {
  it('keeps the del: marker of a kill in flight until that kill ends', async () => {
    const h = await withPeer({ config: { e2b: { reconciliation_orphan_ttl_seconds: 0 } } });
    const orphan = await h.fake.seed({ metadata: tagged(undefined) });
    h.fake.gate.pause('kill', { times: 1 });
    const report = track(h.provider.reapOrphans({ waitForGrace: false }));
    const kill = await h.fake.gate.nextCall('kill');
    await h.provider.reset();
    expect(await h.ownership.owner(orphan.sandboxId)).toMatchObject({ state: 'del' });
    // Nobody may hand out a VM that is being killed.
    expect(await h.peer.take(orphan.sandboxId)).toBe(false);
    await kill.release();
    expect((await report.promise).reaped).toEqual([orphan.sandboxId]);
    expect(await h.ownership.owner(orphan.sandboxId)).toBeUndefined();
  });

  it('waits for a create in flight, then hands over what it made', async () => {
    const h = await withPeer();
    h.fake.gate.pause('run', { times: 1 }); // the new VM's bootstrap
    const acquire = track(h.provider.acquire(T('t1')));
    const bootstrap = await h.fake.gate.nextCall('run');
    const reset = await resetWaiting(h);
    await bootstrap.release();
    const id = await acquire.promise;
    await reset.promise;
    await handedOver(h, id);
  });

  it('refuses an acquire queued behind the one in flight on the same thread', async () => {
    const h = await withPeer();
    h.fake.gate.pause('run', { times: 1 });
    const acquire = track(h.provider.acquire(T('t1')));
    const bootstrap = await h.fake.gate.nextCall('run');
    const queued = track(h.provider.acquire(T('t1')));
    await settle(); // queued on the thread's lock
    const reset = await resetWaiting(h);
    await bootstrap.release();
    const id = await acquire.promise;
    await expect(queued.promise).rejects.toBeInstanceOf(ProviderClosedError);
    await reset.promise;
    await handedOver(h, id);
  });

  it('a shutdown() while reset() waits kills nothing: the reset hands over', async () => {
    const h = await withPeer();
    h.fake.gate.pause('run', { times: 1 });
    const acquire = track(h.provider.acquire(T('t1')));
    const bootstrap = await h.fake.gate.nextCall('run');
    const reset = await resetWaiting(h);
    const shutdown = h.provider.shutdown();
    await bootstrap.release();
    const id = await acquire.promise;
    await Promise.all([reset.promise, shutdown]);
    await handedOver(h, id);
  });

  it('waits for a reclaim in flight, then hands the thread’s VM over (its files kept)', async () => {
    const h = await withPeer();
    const id = await h.provider.acquire(T('t1'));
    await h.provider.get(id)!.executeCommand('echo kept > /home/user/marker');
    await h.provider.release(id);
    h.fake.gate.pause('run', { times: 2 }); // the reclaim's liveness probe, then its bootstrap
    const acquire = track(h.provider.acquire(T('t1')));
    await (await h.fake.gate.nextCall('run')).release();
    const bootstrap = await h.fake.gate.nextCall('run');
    const reset = await resetWaiting(h);
    await bootstrap.release();
    expect(await acquire.promise).toBe(id);
    await reset.promise;
    await handedOver(h, id);
  });

  it('waits for a discovery in flight, then hands the VM over', async () => {
    const h = await withPeer();
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    h.fake.gate.pause('run', { times: 2 }); // the candidate's probe, then its bootstrap
    const acquire = track(h.provider.acquire(T('t1')));
    await (await h.fake.gate.nextCall('run')).release();
    const bootstrap = await h.fake.gate.nextCall('run');
    const reset = await resetWaiting(h);
    await bootstrap.release();
    expect(await acquire.promise).toBe(vm.sandboxId);
    await reset.promise;
    await handedOver(h, vm.sandboxId);
  });

  it('waits for a release in flight, which parks the VM, then hands it over', async () => {
    const h = await withPeer();
    const id = await h.provider.acquire(T('t1'));
    h.fake.gate.pause('setTimeout', { times: 1 }); // the release's timeout refresh, before parking
    const release = track(h.provider.release(id));
    const refresh = await h.fake.gate.nextCall('setTimeout');
    const reset = await resetWaiting(h);
    await refresh.release();
    await release.promise;
    await reset.promise;
    await handedOver(h, id);
  });

  it('waits for a reconciliation pass in flight, then hands over what it adopted', async () => {
    const h = await withPeer();
    const vm = await h.fake.seed({ metadata: tagged('t1') });
    h.fake.gate.pause('run', { times: 2 }); // the probe, then the adoption's bootstrap
    const pass = track(h.provider.reconcileNow());
    await (await h.fake.gate.nextCall('run')).release();
    const bootstrap = await h.fake.gate.nextCall('run');
    const reset = await resetWaiting(h);
    await bootstrap.release();
    expect(await pass.promise).toMatchObject({ adopted: 1 });
    await reset.promise;
    await handedOver(h, vm.sandboxId);
  });

  it('a pass in flight goes no further once reset began: no other thread is looked at, nothing is reaped', async () => {
    const h = await withPeer({
      config: { e2b: { reconciliation_grace_seconds: 0, reconciliation_orphan_ttl_seconds: 0 } },
    });
    await h.fake.seed({ metadata: tagged('t1') });
    await h.fake.seed({ metadata: tagged('t2', 1) });
    const dup = await h.fake.seed({ metadata: tagged('t2', 2) });
    const orphan = await h.fake.seed({ metadata: tagged(undefined) });
    h.fake.gate.pause('run', { times: 1 }); // the first thread's probe
    const pass = track(h.provider.reconcileNow());
    const probe = await h.fake.gate.nextCall('run');
    const reset = await resetWaiting(h);
    await probe.release();
    expect(await pass.promise).toMatchObject({ adopted: 0, killed: 0 });
    await reset.promise;
    expect(h.fake.callsOf('kill')).toHaveLength(0);
    expect(h.fake.vms.get(dup.sandboxId)!.alive).toBe(true);
    expect(h.fake.vms.get(orphan.sandboxId)!.alive).toBe(true);
  });

  it('waits for a renewal pass in flight: its re-claim of a lapsed lease does not outlive the hand-over', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const { mine, table } = sharedLeases(clock);
    const store = pausable(mine);
    const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-reset-'));
    const fake = new FakeE2BClient();
    const provider = new E2BSandboxProvider({
      config: parseSandboxConfig({ use: '@sbx/e2b', base_dir: baseDir }),
      client: fake,
      ownershipStore: store.proxy,
      capacityStore: null,
      clock,
      background: true,
    });
    cleanups.push(async () => {
      await provider.shutdown();
      await fake.dispose();
      await rm(baseDir, { recursive: true, force: true });
    });
    await provider.ready();
    const id = await provider.acquire(T('t1'));
    table.expire(id); // a store restart: the lease is gone, its owner re-claims it on renewal
    store.pause('renew', { times: 1 });
    // The timer's pass runs inside `advance`, which returns once that pass has ended.
    const tick = clock.advance(provider.ownership.renewalIntervalSeconds * 1000);
    const renew = await store.nextCall('renew');
    const reset = track(provider.reset());
    await settle();
    await renew.release();
    await reset.promise;
    await tick;
    expect(await mine.owner(id)).toBeUndefined();
    expect(fake.vms.get(id)!.alive).toBe(true);
  });
});
