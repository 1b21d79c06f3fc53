import { settle, track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';
import type { Harness } from './testing/provider-harness.js';

// `listSandboxes` / `reapOrphans`, the capabilities behind `sbx ls` and `sbx gc`. Instances share
// one lease table and one fake container backend; time is a manual clock (lease TTL 120 s). The
// rules every provider shares are in aio-inspection-contract.test.ts; these pin aio's own.

const TTL_MS = 120_000;
const ORPHAN = 'c0ffee0123456789';
const PEERS = 'feedface01234567';

const { harness } = harnessContext();

async function warmSandbox(h: Harness, thread: string): Promise<string> {
  const id = await h.provider.acquire(T(thread));
  await h.provider.release(id);
  return id;
}

/** Lets the pending call run until it waits on the clock (or settles). */
async function untilWaitingOnClock(h: Harness, pending: { readonly settled: boolean }) {
  for (let i = 0; i < 200 && h.clock.pendingTimers === 0 && !pending.settled; i++) await settle(1);
  expect(pending.settled).toBe(false);
  expect(h.clock.pendingTimers).toBe(1);
}

describe('AioSandboxProvider.listSandboxes', () => {
  it('shows tracked sandboxes as active / warm and the store’s view of the others', async () => {
    const a = await harness({ crossProcess: true });
    const active = await a.provider.acquire(T('t1'));
    const warm = await warmSandbox(a, 't2');
    a.backend.startExternal(ORPHAN);
    a.backend.startExternal(PEERS);
    const dying = 'deadbeef01234567';
    a.backend.startExternal(dying);
    const peer = a.peerStore('gateway-b');
    await peer.take(PEERS);
    await peer.claim(dying, { forDestroy: true });
    const leasesBefore = [ORPHAN, PEERS, dying].map((id) => a.lease(id));

    const listed = await a.provider.listSandboxes();
    const byId = new Map(listed.map((s) => [s.id, s]));
    expect(byId.size).toBe(5);
    expect(byId.get(active)).toMatchObject({
      state: 'active',
      userId: 'u1',
      threadId: 't1',
      location: `fake-${active}`,
    });
    expect(byId.get(active)?.updatedAt).toBe(new Date(a.clock.now()).toISOString());
    expect(byId.get(warm)).toMatchObject({ state: 'warm', userId: 'u1', threadId: 't2' });
    expect(byId.get(ORPHAN)).toEqual({ id: ORPHAN, state: 'unowned', location: `fake-${ORPHAN}` });
    expect(byId.get(PEERS)?.state).toBe('owned by gateway-b');
    expect(byId.get(dying)?.state).toBe('being destroyed by gateway-b');
    // A read-only view: no lease written, nothing stopped, nothing adopted.
    expect([ORPHAN, PEERS, dying].map((id) => a.lease(id))).toEqual(leasesBefore);
    expect(a.backend.count('destroy')).toBe(0);
    expect(a.provider.stateSnapshot()).toMatchObject({ active: [active], warm: [warm] });
  });

  it('says “owner unknown” when the store cannot answer, and still lists tracked ones', async () => {
    const a = await harness({ crossProcess: true });
    const active = await a.provider.acquire(T('t1'));
    a.backend.startExternal(ORPHAN);
    a.faults.fail('owner');
    const listed = await a.provider.listSandboxes();
    expect(listed.find((s) => s.id === ORPHAN)?.state).toBe('owner unknown');
    expect(listed.find((s) => s.id === active)?.state).toBe('active');
    expect(a.logger.has('warn', `Could not read the owner of sandbox ${ORPHAN}`)).toBe(true);
  });

  it('propagates a backend that cannot list', async () => {
    const a = await harness();
    a.backend.failList = new Error('docker down');
    await expect(a.provider.listSandboxes()).rejects.toThrow('docker down');
  });
});

describe('AioSandboxProvider.reapOrphans', () => {
  it('keeps tracked and peer-owned containers; reaps an unowned one only after a full grace', async () => {
    const a = await harness({ crossProcess: true });
    const active = await a.provider.acquire(T('t1'));
    const warm = await warmSandbox(a, 't2');
    a.backend.startExternal(ORPHAN);
    a.backend.startExternal(PEERS);
    const peer = a.peerStore('gateway-b');
    await peer.take(PEERS);

    const reap = track(a.provider.reapOrphans());
    await untilWaitingOnClock(a, reap);
    // The live peer renews within its interval while the grace runs.
    await a.clock.advance(60_000);
    expect(await peer.renew(PEERS)).toBe('RENEWED');
    await a.clock.advance(TTL_MS - 60_000 - 1);
    await settle(3);
    expect(reap.settled).toBe(false);
    expect(a.backend.isRunning(ORPHAN)).toBe(true);
    await a.clock.advance(1);
    const report = await reap.promise;

    expect(report.reaped).toEqual([ORPHAN]);
    expect(a.backend.isRunning(ORPHAN)).toBe(false);
    expect(a.lease(ORPHAN)).toBeUndefined(); // the teardown marker is cleared after the stop
    const reasons = Object.fromEntries(report.kept.map((k) => [k.id, k.reason]));
    expect(reasons).toEqual({
      [active]: 'active in this instance',
      [warm]: 'warm in this instance',
      [PEERS]: 'owned by gateway-b',
    });
    for (const id of [active, warm, PEERS]) expect(a.backend.isRunning(id)).toBe(true);
    expect(a.lease(PEERS)).toBe('own:gateway-b');
    expect(a.provider.stateSnapshot()).toMatchObject({ active: [active], warm: [warm] });
  });

  it('a dry run reports the orphan but claims and stops nothing', async () => {
    const a = await harness({ crossProcess: true });
    a.backend.startExternal(ORPHAN);
    const claims = a.store.count('claim');
    const reap = track(a.provider.reapOrphans({ dryRun: true, graceMs: 5_000 }));
    await untilWaitingOnClock(a, reap);
    await a.clock.advance(5_000);
    expect(await reap.promise).toEqual({ reaped: [ORPHAN], kept: [] });
    expect(a.backend.count('destroy')).toBe(0);
    expect(a.backend.isRunning(ORPHAN)).toBe(true);
    expect(a.store.count('claim')).toBe(claims);
    expect(a.lease(ORPHAN)).toBeUndefined();
  });

  it('a peer republishing its lease during the grace keeps the container', async () => {
    const a = await harness({ crossProcess: true });
    a.backend.startExternal(ORPHAN); // its owner's lease was lost to a store flush
    const reap = track(a.provider.reapOrphans({ graceMs: 5_000 }));
    await untilWaitingOnClock(a, reap);
    await a.peerStore('gateway-b').take(ORPHAN); // the owner's next renewal tick
    await a.clock.advance(5_000);
    const report = await reap.promise;
    expect(report.reaped).toEqual([]);
    expect(report.kept).toEqual([{ id: ORPHAN, reason: 'owned by gateway-b' }]);
    expect(a.backend.isRunning(ORPHAN)).toBe(true);
    expect(a.lease(ORPHAN)).toBe('own:gateway-b');
  });

  it('a store that cannot answer keeps the container', async () => {
    const a = await harness({ crossProcess: true });
    a.backend.startExternal(ORPHAN);
    a.faults.fail('owner');
    const report = await a.provider.reapOrphans();
    expect(report.reaped).toEqual([]);
    expect(report.kept).toHaveLength(1);
    expect(report.kept[0]?.reason).toMatch(/^owner unknown/);
    expect(a.backend.isRunning(ORPHAN)).toBe(true);
  });

  it('a claim refused after the grace keeps the container', async () => {
    const a = await harness({ crossProcess: true });
    a.backend.startExternal(ORPHAN);
    const reap = track(a.provider.reapOrphans({ graceMs: 5_000 }));
    await untilWaitingOnClock(a, reap);
    // The first look took no claim; the store now fails at the claim itself.
    a.faults.fail('claim');
    await a.clock.advance(5_000);
    const report = await reap.promise;
    expect(report.reaped).toEqual([]);
    expect(report.kept[0]?.reason).toMatch(/claim refused/);
    expect(a.backend.isRunning(ORPHAN)).toBe(true);
  });

  it('needs no grace on a store without cross-process visibility', async () => {
    const a = await harness({ crossProcess: false });
    const active = await a.provider.acquire(T('t1'));
    a.backend.startExternal(ORPHAN);
    const report = await a.provider.reapOrphans();
    expect(report).toEqual({
      reaped: [ORPHAN],
      kept: [{ id: active, reason: 'active in this instance' }],
    });
    expect(a.backend.isRunning(ORPHAN)).toBe(false);
    expect(a.clock.pendingTimers).toBe(0);
  });

  it('an earlier reconciliation’s sighting counts toward the grace', async () => {
    const a = await harness({ crossProcess: true });
    a.backend.startExternal(ORPHAN);
    expect((await a.provider.reconcile()).deferred).toEqual([ORPHAN]);
    await a.clock.advance(TTL_MS);
    const report = await a.provider.reapOrphans();
    expect(report.reaped).toEqual([ORPHAN]);
    expect(a.backend.isRunning(ORPHAN)).toBe(false);
  });

  it('rejects a negative grace', async () => {
    const a = await harness();
    await expect(a.provider.reapOrphans({ graceMs: -1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});
