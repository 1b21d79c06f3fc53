import {
  AbortedError,
  MemoryCapacityStore,
  MemoryOwnershipStore,
  OwnershipBackendError,
} from '@sbx/core';
import { MemoryLeaseTable } from '@sbx/core/provider-kit';
import { CAPACITY_SANDBOX_PREFIX } from '@sbx/core/internal';
import type { ClockTimeoutOptions, ClockTimer, OwnershipStore } from '@sbx/core';
import { ManualClock, settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_E2B_TEMPLATE } from './e2b-config.js';
import { E2B_TAGS } from './metadata.js';
import { makeHarness } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

// `listSandboxes` / `reapOrphans`, the capabilities behind `sbx ls` and `sbx gc`, over the in-memory
// E2B control plane. Every provider is built without background work, as the CLI builds it, so
// nothing but the call under test looks at the VMs; time is a manual clock. The rules every
// provider shares are in e2b-inspection-contract.test.ts; these pin e2b's own.

const START = 1_700_000_000_000;
const NOW_S = START / 1000;
const PEER = 'gateway-b';

/** A manual clock that also tells when something starts waiting on it. */
class WatchedClock extends ManualClock {
  #waiters: (() => void)[] = [];

  override setTimeout(
    callback: () => void | Promise<void>,
    ms: number,
    options?: ClockTimeoutOptions,
  ): ClockTimer {
    const timer = super.setTimeout(callback, ms, options);
    for (const wake of this.#waiters.splice(0)) wake();
    return timer;
  }

  /** Resolves at the next `setTimeout` (call it before starting the work that schedules one). */
  nextTimer(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}

/** Starts `work` and resolves once it waits on the clock; fails if it settles without waiting. */
async function startWaiting<T>(clock: WatchedClock, work: () => Promise<T>) {
  const waiting = clock.nextTimer();
  const pending = track(work());
  const settledFirst = pending.promise.then(
    () => Promise.reject(new Error('settled without waiting on the clock')),
    (error: unknown) => Promise.reject(error),
  );
  await Promise.race([waiting, settledFirst]);
  settledFirst.catch(() => undefined);
  return pending;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const h = await makeHarness(options);
  cleanups.push(h.cleanup);
  return h;
}

/** Tags as a gateway writes them; `thread` undefined makes a metadata orphan. */
const tagged = (
  thread: string | undefined,
  createdAtSeconds: number,
  extra: Record<string, string> = {},
) => ({
  [E2B_TAGS.provider]: 'e2b_sandbox_provider',
  [E2B_TAGS.gateway]: PEER,
  [E2B_TAGS.createdAt]: String(createdAtSeconds),
  ...(thread === undefined ? {} : { [E2B_TAGS.user]: 'u1', [E2B_TAGS.thread]: thread }),
  ...extra,
});

/**
 * The ownership store the provider uses, observable and breakable: `calls` records claims (with
 * the number of kills the fake had seen), `broken` makes every call but `take` reject.
 */
function observedStore(inner: OwnershipStore, fake: () => FakeE2BClient) {
  const state = { broken: false, calls: [] as string[] };
  const gate = <T>(name: string, run: () => Promise<T>): Promise<T> => {
    state.calls.push(`${name}(kills=${fake().callsOf('kill').length})`);
    if (state.broken) return Promise.reject(new OwnershipBackendError('store unreachable'));
    return run();
  };
  const store: OwnershipStore = {
    get ownerId() {
      return inner.ownerId;
    },
    supportsCrossProcess: inner.supportsCrossProcess,
    take: (id) => inner.take(id),
    claim: (id, o) => gate(o?.forDestroy ? 'claim:destroy' : 'claim', () => inner.claim(id, o)),
    renew: (id) => inner.renew(id),
    release: (id) => gate('release', () => inner.release(id)),
    owner: (id) => gate('owner', () => inner.owner(id)),
    close: () => inner.close(),
  };
  return { store, state };
}

/** A provider whose store shares a lease table with a peer gateway's store. */
async function withPeer(options: HarnessOptions = {}) {
  const clock = options.clock ?? new WatchedClock(START);
  const table = new MemoryLeaseTable({ clock });
  const peer = new MemoryOwnershipStore({ table, ownerId: PEER });
  const fake = new FakeE2BClient();
  cleanups.push(() => fake.dispose());
  const observed = observedStore(new MemoryOwnershipStore({ table }), () => fake);
  const h = await harness({ ...options, clock, fake, ownership: observed.store });
  return { ...h, peer, table, store: observed.state };
}

const reasons = (report: { kept: readonly { id: string; reason: string }[] }) =>
  Object.fromEntries(report.kept.map((k) => [k.id, k.reason]));

describe('E2BSandboxProvider.listSandboxes', () => {
  it('shows active and warm VMs as this instance sees them, the others with the remote state', async () => {
    const { provider, fake, clock, peer, store } = await withPeer();
    const active = await provider.acquire({ userId: 'u1', threadId: 't1' });
    const warm = await provider.acquire({ userId: 'u1', threadId: 't2' });
    await clock.advance(5_000);
    await provider.release(warm);
    const peers = await fake.seed({ metadata: tagged('t3', NOW_S - 60), template: 'tpl-x' });
    await peer.take(peers.sandboxId);
    const orphan = await fake.seed({
      metadata: { [E2B_TAGS.provider]: 'e2b_sandbox_provider' },
      startedAt: new Date(START - 90_000),
    });
    // Not ours: another provider's tag.
    await fake.seed({ metadata: { [E2B_TAGS.provider]: 'someone-else' } });
    const connectsBefore = fake.callsOf('connect').length;
    const storeCallsBefore = store.calls.length;

    const listed = await provider.listSandboxes();

    const byId = new Map(listed.map((s) => [s.id, s]));
    expect([...byId.keys()].sort()).toEqual(
      [active, warm, peers.sandboxId, orphan.sandboxId].sort(),
    );
    expect(byId.get(active)).toMatchObject({
      userId: 'u1',
      threadId: 't1',
      state: 'active',
      updatedAt: new Date(START).toISOString(),
      location: `e2b:${DEFAULT_E2B_TEMPLATE}`,
    });
    expect(byId.get(warm)).toMatchObject({
      userId: 'u1',
      threadId: 't2',
      state: 'warm',
      updatedAt: new Date(START + 5_000).toISOString(),
    });
    expect(byId.get(peers.sandboxId)).toEqual({
      id: peers.sandboxId,
      userId: 'u1',
      threadId: 't3',
      state: 'running',
      updatedAt: new Date(START - 60_000).toISOString(),
      location: 'e2b:tpl-x',
    });
    expect(byId.get(orphan.sandboxId)).toEqual({
      id: orphan.sandboxId,
      state: 'running',
      updatedAt: new Date(START - 90_000).toISOString(),
      location: 'e2b:base',
    });
    // Read-only: nothing probed, claimed or killed; the peer keeps its lease.
    expect(fake.callsOf('connect')).toHaveLength(connectsBefore);
    expect(store.calls.slice(storeCallsBefore)).toEqual([]);
    expect(fake.callsOf('kill')).toHaveLength(0);
    expect(await peer.owner(peers.sandboxId)).toEqual({ state: 'own', ownerId: PEER });
  });

  it('reports a listing that failed outright instead of an empty account', async () => {
    const { provider, fake } = await harness();
    await fake.seed({ metadata: tagged('t1', NOW_S) });
    fake.fail('list', new Error('E2B API unreachable'));
    await expect(provider.listSandboxes()).rejects.toThrow(/E2B API unreachable/);
    expect(await provider.listSandboxes()).toHaveLength(1);
  });
});

describe('E2BSandboxProvider.reapOrphans', () => {
  const eager = { e2b: { reconciliation_grace_seconds: 0 } };

  it('a dry run claims and kills nothing and reports what the real run then reaps', async () => {
    const { provider, fake, store, table } = await withPeer({ config: eager });
    const canonical = await fake.seed({ metadata: tagged('t1', NOW_S - 300) });
    const dup = await fake.seed({ metadata: tagged('t1', NOW_S - 200) });
    const orphan = await fake.seed({ metadata: tagged(undefined, NOW_S - 7_200) });

    const dry = await provider.reapOrphans({ dryRun: true });

    expect(dry.reaped).toEqual([dup.sandboxId, orphan.sandboxId]);
    expect(dry.kept).toEqual([
      { id: canonical.sandboxId, reason: 'the canonical sandbox of thread u1/t1' },
    ]);
    expect(fake.callsOf('kill')).toHaveLength(0);
    expect(fake.alive()).toHaveLength(3);
    expect(store.calls.filter((c) => c.startsWith('claim'))).toEqual([]);
    expect(table.size).toBe(0);

    const real = await provider.reapOrphans();
    expect(real).toEqual(dry);
    expect(fake.alive().map((v) => v.sandboxId)).toEqual([canonical.sandboxId]);
  });

  it('keeps a VM a live peer leases (or is destroying), in a dry run and a real one', async () => {
    const { provider, fake, peer } = await withPeer();
    const leased = await fake.seed({ metadata: tagged(undefined, NOW_S - 7_200) });
    const dying = await fake.seed({ metadata: tagged(undefined, NOW_S - 7_200) });
    await peer.take(leased.sandboxId);
    await peer.claim(dying.sandboxId, { forDestroy: true });

    for (const dryRun of [true, false]) {
      const report = await provider.reapOrphans({ dryRun });
      expect(report.reaped).toEqual([]);
      expect(reasons(report)).toEqual({
        [leased.sandboxId]: `leased by ${PEER} (a live peer's lease keeps it)`,
        [dying.sandboxId]: `being destroyed by ${PEER}`,
      });
    }
    expect(fake.callsOf('kill')).toHaveLength(0);
    expect(await peer.owner(leased.sandboxId)).toEqual({ state: 'own', ownerId: PEER });
    expect(await peer.owner(dying.sandboxId)).toEqual({ state: 'del', ownerId: PEER });
  });

  it('reaps an orphan only past the orphan TTL from its creation tag, under the held del: marker, and frees its ledger slot', async () => {
    const capacity = new MemoryCapacityStore({ hardLimit: 10 });
    const { provider, fake, store, table } = await withPeer({
      capacity,
      config: { e2b: { reconciliation_orphan_ttl_seconds: 3_600 } },
    });
    const young = await fake.seed({ metadata: tagged(undefined, NOW_S - 600) });
    const old = await fake.seed({ metadata: tagged(undefined, NOW_S - 3_601) });
    await capacity.track(young.sandboxId);
    await capacity.track(old.sandboxId);
    const slot = (id: string) => capacity.ledger.snapshot()[CAPACITY_SANDBOX_PREFIX + id];

    const report = await provider.reapOrphans();

    expect(report.reaped).toEqual([old.sandboxId]);
    expect(report.kept).toEqual([
      {
        id: young.sandboxId,
        reason:
          'no user/thread tags: inside the 3600 s reconciliation_orphan_ttl_seconds (600 s since its creation tag)',
      },
    ]);
    expect(fake.vms.get(old.sandboxId)!.alive).toBe(false);
    expect(fake.vms.get(young.sandboxId)!.alive).toBe(true);
    expect(slot(old.sandboxId)).toBeUndefined();
    expect(slot(young.sandboxId)).toBe('1');
    // claimed for destroy before the kill, the marker released after it
    expect(store.calls).toEqual(['claim:destroy(kills=0)', 'release(kills=1)']);
    expect(table.get(old.sandboxId)).toBeUndefined();
  });

  it('one look keeps a duplicate inside the grace; a later one reaps it', async () => {
    const { provider, fake, clock } = await withPeer({
      config: { e2b: { reconciliation_grace_seconds: 120 } },
    });
    const canonical = await fake.seed({ metadata: tagged('t1', NOW_S - 300) });
    const dup = await fake.seed({ metadata: tagged('t1', NOW_S - 200) });

    const first = await provider.reapOrphans({ waitForGrace: false });
    expect(first.reaped).toEqual([]);
    expect(reasons(first)).toEqual({
      [canonical.sandboxId]: 'the canonical sandbox of thread u1/t1',
      [dup.sandboxId]:
        'duplicate of thread u1/t1: inside the 120 s reconciliation_grace_seconds (0 s since first seen)',
    });
    await clock.advance(119_000);
    expect((await provider.reapOrphans({ waitForGrace: false })).reaped).toEqual([]);
    await clock.advance(1_000);
    const later = await provider.reapOrphans({ waitForGrace: false });
    expect(later.reaped).toEqual([dup.sandboxId]);
    expect(fake.vms.get(dup.sandboxId)!.alive).toBe(false);
    expect(fake.vms.get(canonical.sandboxId)!.alive).toBe(true);
  });

  it('by default waits out the grace on the clock, then looks again and reaps', async () => {
    const clock = new WatchedClock(START);
    const { provider, fake } = await withPeer({
      clock,
      config: { e2b: { reconciliation_grace_seconds: 120 } },
    });
    const canonical = await fake.seed({ metadata: tagged('t1', NOW_S - 300) });
    const dup = await fake.seed({ metadata: tagged('t1', NOW_S - 200) });

    const reap = await startWaiting(clock, () => provider.reapOrphans());
    expect(clock.refTimers).toBe(1); // keeps a one-shot CLI process alive
    await clock.advance(119_999);
    await settle();
    expect(reap.settled).toBe(false);
    expect(fake.vms.get(dup.sandboxId)!.alive).toBe(true);
    await clock.advance(1);
    const report = await reap.promise;
    expect(report.reaped).toEqual([dup.sandboxId]);
    expect(reasons(report)).toEqual({
      [canonical.sandboxId]: 'the canonical sandbox of thread u1/t1',
    });
    expect(fake.vms.get(dup.sandboxId)!.alive).toBe(false);
  });

  it('the second look decides afresh: a duplicate whose canonical died meanwhile is kept', async () => {
    const clock = new WatchedClock(START);
    const { provider, fake } = await withPeer({
      clock,
      config: { e2b: { reconciliation_grace_seconds: 120 } },
    });
    const canonical = await fake.seed({ metadata: tagged('t1', NOW_S - 300) });
    const dup = await fake.seed({ metadata: tagged('t1', NOW_S - 200) });
    const reap = await startWaiting(clock, () => provider.reapOrphans());
    fake.reap(canonical.sandboxId); // the control plane's own timeout ends it
    await clock.advance(120_000);
    const report = await reap.promise;
    expect(report).toEqual({
      reaped: [],
      kept: [{ id: dup.sandboxId, reason: 'the canonical sandbox of thread u1/t1' }],
    });
    expect(fake.vms.get(dup.sandboxId)!.alive).toBe(true);
  });

  it('a store that cannot answer keeps every VM (counted as owned by a peer)', async () => {
    const { provider, fake, store } = await withPeer({ config: eager });
    const orphan = await fake.seed({ metadata: tagged(undefined, NOW_S - 7_200) });
    store.broken = true;
    for (const dryRun of [true, false]) {
      const report = await provider.reapOrphans({ dryRun });
      expect(report.reaped).toEqual([]);
      expect(reasons(report)).toEqual({
        [orphan.sandboxId]:
          'the ownership store cannot answer (store unreachable): counted as owned by a peer',
      });
    }
    expect(fake.callsOf('kill')).toHaveLength(0);
    expect(fake.vms.get(orphan.sandboxId)!.alive).toBe(true);
  });

  it('never reaps a VM this instance tracks, however old its tags say it is', async () => {
    const { provider, fake, clock } = await withPeer({
      config: { e2b: { reconciliation_grace_seconds: 0, reconciliation_orphan_ttl_seconds: 0 } },
    });
    await clock.advance(3_600_000);
    const anonymous = await provider.acquire(); // no thread: an orphan by its tags
    const warm = await provider.acquire({ userId: 'u1', threadId: 't1' });
    await provider.release(warm);
    // An older VM of the same thread: oldest first would make it canonical; tracked ones go first.
    const older = await fake.seed({ metadata: tagged('t1', NOW_S - 600) });

    for (const dryRun of [true, false]) {
      const report = await provider.reapOrphans({ dryRun });
      expect(report.reaped).toEqual([older.sandboxId]);
      expect(reasons(report)).toEqual({
        [anonymous]: 'active in this instance',
        [warm]: 'warm in this instance',
      });
    }
    expect(fake.vms.get(anonymous)!.alive).toBe(true);
    expect(fake.vms.get(warm)!.alive).toBe(true);
    expect(fake.vms.get(older.sandboxId)!.alive).toBe(false);
    expect(provider.warmIds()).toEqual([warm]);
  });

  it('an aborted wait rejects and kills nothing', async () => {
    const clock = new WatchedClock(START);
    const { provider, fake } = await withPeer({
      clock,
      config: { e2b: { reconciliation_grace_seconds: 120 } },
    });
    await fake.seed({ metadata: tagged('t1', NOW_S - 300) });
    await fake.seed({ metadata: tagged('t1', NOW_S - 200) });
    const controller = new AbortController();
    const reap = await startWaiting(clock, () =>
      provider.reapOrphans({ signal: controller.signal }),
    );
    controller.abort();
    await expect(reap.promise).rejects.toBeInstanceOf(AbortedError);
    expect(clock.pendingTimers).toBe(0);
    expect(fake.callsOf('kill')).toHaveLength(0);
  });
});
