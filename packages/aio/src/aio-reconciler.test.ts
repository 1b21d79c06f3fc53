import { OwnershipBackendError } from '@sbx/core';
import { track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';
import type { Harness } from './testing/provider-harness.js';

// Reconciliation's adoption of untracked containers: what it re-checks after its claim, and what
// its grace counts as "seen unowned".

const { harness, peerOf } = harnessContext();

const STORE_METHODS = ['take', 'claim', 'renew', 'release', 'owner'] as const;
/** The shared store stops answering for every instance given, then comes back. */
function outage(...instances: Harness[]) {
  for (const h of instances) {
    for (const m of STORE_METHODS) h.faults.fail(m, new OwnershipBackendError('store down'));
  }
  return { end: () => instances.forEach((h) => h.faults.heal()) };
}

describe('adoption re-checks after its claim', () => {
  it('a container an acquire took up during the claim is not adopted as well (never active and warm at once)', async () => {
    const h = await harness();
    const id = h.provider.sandboxIdFor(T('t'));
    h.backend.startExternal(id); // left by an earlier run
    h.store.pause('claim', { times: 1 });
    const pass = track(h.provider.reconcile());
    const claim = await h.store.nextCall('claim');
    expect(await h.provider.acquire(T('t'))).toBe(id); // discovered and published meanwhile
    await claim.release(); // granted: the lease is this instance's own
    expect((await pass.promise).adopted).toEqual([]);
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [id], warm: [] });
  });
});

describe('the adoption grace counts only time the store answered', () => {
  it('a flush, then an outage longer than the TTL: the first look after recovery does not adopt a live peer’s sandbox', async () => {
    const a = await harness({ crossProcess: true });
    const b = await peerOf(a);
    const x = await a.provider.acquire(T('t')); // A's turn runs
    a.table.clear(); // FLUSHALL
    expect((await b.provider.reconcile()).deferred).toEqual([x]); // B's first sighting
    const down = outage(a, b);
    for (let tick = 0; tick < 5; tick++) {
      await a.clock.advance(30_000);
      await a.provider.renewLeases(); // fail-open: A keeps its sandbox
      expect((await b.provider.reconcile()).adopted).toEqual([]); // the owner is unknown
    }
    down.end();
    // B looks before A's next renewal could republish the lease.
    expect((await b.provider.reconcile()).adopted).toEqual([]);
    await a.clock.advance(30_000);
    await a.provider.renewLeases();
    expect((await b.provider.reconcile()).adopted).toEqual([]);
    expect(a.provider.get(x)).toBeDefined();
    expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    expect(b.provider.stateSnapshot().warm).toEqual([]);
  });

  it('an outage this instance saw only through its own renewals also restarts the grace', async () => {
    const a = await harness({ crossProcess: true });
    const b = await peerOf(a);
    const x = await a.provider.acquire(T('t1'));
    await b.provider.acquire(T('t2')); // B holds a lease of its own, so it renews
    a.table.clear();
    expect((await b.provider.reconcile()).deferred).toContain(x);
    const down = outage(a, b);
    for (let tick = 0; tick < 5; tick++) {
      await a.clock.advance(30_000);
      await a.provider.renewLeases();
      await b.provider.renewLeases(); // B's store calls fail: it knows the store was down
    }
    down.end();
    expect((await b.provider.reconcile()).adopted).toEqual([]);
    await a.provider.renewLeases();
    expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    expect(a.provider.get(x)).toBeDefined();
  });

  it('a crashed owner’s container is still adopted, one full grace after the store came back', async () => {
    const a = await harness({ crossProcess: true });
    const b = await peerOf(a);
    const x = await a.provider.acquire(T('t'));
    a.table.clear(); // A is gone and the store lost its lease
    expect((await b.provider.reconcile()).deferred).toEqual([x]);
    const down = outage(b);
    await b.clock.advance(150_000);
    expect((await b.provider.reconcile()).adopted).toEqual([]);
    down.end();
    expect((await b.provider.reconcile()).deferred).toEqual([x]); // the grace starts again
    await b.clock.advance(119_999);
    expect((await b.provider.reconcile()).adopted).toEqual([]);
    await b.clock.advance(1);
    expect((await b.provider.reconcile()).adopted).toEqual([x]);
  });
});

describe('the orphan reaper', () => {
  it('keeps a candidate an acquire took up while an earlier stop of the same pass was in flight', async () => {
    const h = await harness();
    const first = h.provider.sandboxIdFor(T('a'));
    const second = h.provider.sandboxIdFor(T('b'));
    h.backend.startExternal(first);
    h.backend.startExternal(second);
    h.store.pause('claim', { times: 1 });
    const gc = track(h.provider.reapOrphans({ graceMs: 0 }));
    const claim = await h.store.nextCall('claim');
    expect(claim.args[0]).toBe(first);
    expect(await h.provider.acquire(T('b'))).toBe(second); // discovered meanwhile
    await claim.release();
    const report = await gc.promise;
    expect(report.reaped).toEqual([first]);
    expect(report.kept).toEqual([{ id: second, reason: 'taken up by this instance meanwhile' }]);
    expect(h.backend.isRunning(second)).toBe(true);
  });

  it('reports a failed stop as kept, not reaped', async () => {
    const h = await harness();
    const id = h.provider.sandboxIdFor(T('a'));
    h.backend.startExternal(id);
    h.backend.failDestroy = new Error('engine refused');
    const report = await h.provider.reapOrphans({ graceMs: 0 });
    expect(report.reaped).toEqual([]);
    expect(report.kept).toEqual([
      { id, reason: 'the stop failed (see the log); the container may still run' },
    ]);
  });
});

describe('reconciliation and ids', () => {
  it('never adopts a container whose id is not a sandbox id (a label anyone can set)', async () => {
    const h = await harness();
    const odd = '../../etc';
    h.backend.startExternal(odd);
    const summary = await h.provider.reconcile();
    expect(summary.adopted).toEqual([]);
    expect(summary.skipped).toEqual([odd]);
    expect(h.provider.stateSnapshot().warm).toEqual([]);
    expect(h.lease(odd)).toBeUndefined();
  });
});

describe('a sandbox adopted, then taken back', () => {
  it('its old sighting is gone: after a later flush the grace starts afresh', async () => {
    const a = await harness({ crossProcess: true });
    const b = await peerOf(a);
    const x = await a.provider.acquire(T('t'));
    await a.provider.release(x);
    // A stalls past the TTL: its lease lapses and B adopts X after one grace.
    await a.clock.advance(121_000);
    expect((await b.provider.reconcile()).deferred).toEqual([x]);
    await a.clock.advance(120_000);
    expect((await b.provider.reconcile()).adopted).toEqual([x]);
    // The thread's next turn lands on A again; B hears LOST and forgets X.
    expect(await a.provider.acquire(T('t'))).toBe(x);
    await b.provider.renewLeases();
    expect(b.provider.stateSnapshot().warm).toEqual([]);
    a.table.clear(); // FLUSHALL while A's turn runs
    expect((await b.provider.reconcile()).adopted).toEqual([]);
    await a.provider.renewLeases();
    expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    expect(a.provider.get(x)).toBeDefined();
  });
});
