import { settle, track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';

// Bugs found where the provider's paths meet (issue #16), each pinned by the interleaving that
// produced it: the test fails on the code before the fix.

const { harness, peerOf } = harnessContext();

describe('the readiness window of a create (#16 bug 4)', () => {
  it('reconciliation does not adopt a container still inside its create’s readiness wait', async () => {
    const h = await harness({ config: { replicas: 1 } });
    h.backendGate.pause('readinessProbe', { times: 1 });
    const first = track(h.provider.acquire(T('a')));
    const probe = await h.backendGate.nextCall('readinessProbe');
    // Reconciliation runs meanwhile (the memory store applies no grace: adoption is instant).
    const summary = await h.provider.reconcile().catch(async (err: unknown) => {
      await probe.release();
      throw err;
    });
    expect(summary.adopted).toEqual([]);
    // A create for another thread at the replica cap must not find it as a warm entry to evict.
    const second = track(h.provider.acquire(T('b')));
    await settle();
    await probe.release();
    const id = await first.promise;
    expect(h.backend.isRunning(id)).toBe(true);
    expect(h.provider.get(id)).toBeDefined();
    await second.promise.catch(() => undefined);
    expect(h.backend.isRunning(id)).toBe(true);
  });

  it('the orphan reaper keeps a container still inside its create’s readiness wait', async () => {
    const h = await harness();
    h.backendGate.pause('readinessProbe', { times: 1 });
    const first = track(h.provider.acquire(T('a')));
    const probe = await h.backendGate.nextCall('readinessProbe');
    const report = await h.provider.reapOrphans({ graceMs: 0 }).finally(() => probe.release());
    expect(report.reaped).toEqual([]);
    expect(report.kept.map((k) => k.reason)).toEqual(['being created by this instance']);
    expect(h.backend.isRunning(await first.promise)).toBe(true);
  });
});

describe('a flush after a paused gateway resumed (#16 bug 5)', () => {
  it('a stale warm entry whose renewal heard LOST is never stopped, even once the peer’s lease is flushed', async () => {
    const a = await harness({ crossProcess: true });
    const b = await peerOf(a);
    const x = await a.provider.acquire(T('t'));
    await a.provider.release(x); // parked on A
    // While A was paused, later turns of the thread were served by B.
    expect(await b.provider.acquire(T('t'))).toBe(x);
    expect(a.lease(x)).toBe(`own:${b.ownerId}`);
    // A resumes: its warm expiry reserves X and asks about its lease; the renewal runs meanwhile,
    // hears LOST, and cannot forget the entry the reaper holds.
    for (let t = 0; t < 21; t++) {
      await a.clock.advance(30_000);
      await b.provider.renewLeases(); // B is alive all along
    }
    a.store.pause('renew', { times: 1 });
    const expiry = track(a.provider.reapExpiredWarm());
    const renew = await a.store.nextCall('renew');
    await a.provider.renewLeases();
    await renew.release();
    expect(await expiry.promise).toEqual([]); // refused: B owns it
    // FLUSHALL: every lease is gone; the reaper's next pass must not take that as free.
    a.table.clear();
    await a.provider.reapExpiredWarm();
    expect(a.backend.isRunning(x)).toBe(true);
    expect(a.provider.stateSnapshot().warm).toEqual([]);
    await b.provider.renewLeases(); // the live owner re-asserts its lease
    expect(a.lease(x)).toBe(`own:${b.ownerId}`);
    expect(b.provider.get(x)).toBeDefined();
  });
});

describe('a flush after a paused gateway resumed: the idle reaper of active sandboxes (#16 bug 5)', () => {
  it('a stale active entry whose renewal heard LOST is forgotten, not stopped, once the lease is flushed', async () => {
    const a = await harness({ crossProcess: true });
    const b = await peerOf(a);
    const x = await a.provider.acquire(T('t')); // active on A, then A pauses
    expect(await b.provider.acquire(T('t'))).toBe(x);
    for (let t = 0; t < 21; t++) {
      await a.clock.advance(30_000);
      await b.provider.renewLeases();
    }
    a.store.pause('claim', { times: 1 });
    const idle = track(a.provider.runIdleCheck());
    const claim = await a.store.nextCall('claim');
    await a.provider.renewLeases(); // LOST, while the idle teardown holds it
    await claim.release();
    await idle.promise;
    a.table.clear();
    await a.provider.runIdleCheck();
    expect(a.backend.isRunning(x)).toBe(true);
    expect(a.provider.get(x)).toBeUndefined();
    await b.provider.renewLeases();
    expect(a.lease(x)).toBe(`own:${b.ownerId}`);
  });
});

describe('guards where a round trip lets other paths in (#16 item 6)', () => {
  it('reuse re-checks membership after its take: a release landing meanwhile is not handed out as active', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    h.store.pause('take', { times: 1 });
    const again = track(h.provider.acquire(T('t')));
    const take = await h.store.nextCall('take');
    await h.provider.release(id); // the previous turn's release lands during the round trip
    await take.release();
    expect(await again.promise).toBe(id);
    expect(h.provider.get(id)).toBeDefined();
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [id], warm: [] });
  });

  it('create-register re-checks after its publish: adopted and then evicted meanwhile, it is never handed out', async () => {
    const h = await harness();
    // The take commits, its answer is held: the publish → track window.
    h.store.pause('take', { times: 1, phase: 'after' });
    const acquire = track(h.provider.acquire(T('a')));
    const take = await h.store.nextCall('take');
    const x = h.provider.sandboxIdFor(T('a'));
    expect((await h.provider.reconcile()).adopted).toEqual([x]);
    h.backendGate.pause('destroy', { times: 1 });
    const eviction = track(h.provider.evictOldestWarm());
    const stop = await h.backendGate.nextCall('destroy');
    await take.release();
    await expect(acquire.promise).rejects.toMatchObject({ code: 'SANDBOX_BEING_DESTROYED' });
    expect(h.provider.get(x)).toBeUndefined();
    await stop.release();
    expect(await eviction.promise).toBe(x);
  });

  it('renewal does not forget an entry its own teardown holds: a failed stop keeps it tracked and retried', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    await h.provider.release(id);
    await h.clock.advance(601_000);
    await h.provider.renewLeases();
    h.backendGate.pause('destroy', { times: 1 });
    const expiry = track(h.provider.reapExpiredWarm());
    const stop = await h.backendGate.nextCall('destroy');
    // Mid-stop the lease reads del: (ours): renewal hears LOST.
    await h.provider.renewLeases();
    await stop.fail(new Error('engine timeout'));
    await expiry.promise;
    // Still running, so still tracked: the next pass stops it.
    expect(h.backend.isRunning(id)).toBe(true);
    expect(h.provider.stateSnapshot().warm).toEqual([id]);
    expect(await h.provider.reapExpiredWarm()).toEqual([id]);
    expect(h.backend.isRunning(id)).toBe(false);
  });
});
