import { OwnershipBackendError, RenewOutcome, SandboxIdentityCollisionError } from '@sbx/core';
import { settle, track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';
import { AioSandboxProvider } from './aio-sandbox-provider.js';
import type { Harness } from './testing/provider-harness.js';
import type { FakeContainerClient } from './testing/memory-sandbox-backend.js';

// aio-ownership.md §7.13: for every row, the exact interleaving forced with pausable stores and
// backends, and the row's invariant asserted. Instances share one lease table and one fake
// container backend; time is a manual clock.

const BEING_DESTROYED = 'SANDBOX_BEING_DESTROYED';

const { harness, peerOf } = harnessContext();

/** Short leases for the rows about time: renewal every 1 s, TTL 2 s. */
const SHORT_LEASES = {
  ownership: { type: 'memory', renewal_interval_seconds: 1, ttl_multiplier: 2 },
};

/** An acquired sandbox, parked warm. */
async function warmSandbox(h: Harness, thread = 't'): Promise<string> {
  const id = await h.provider.acquire(T(thread));
  await h.provider.release(id);
  expect(h.provider.stateSnapshot().warm).toContain(id);
  return id;
}

function clientOf(h: Harness, id: string): FakeContainerClient {
  return h.provider.get(id) as FakeContainerClient;
}

/** Steps microtasks until `pending` settles, checking `invariant` at every step. */
async function stepUntilSettled(
  pending: { readonly settled: boolean },
  invariant: () => void,
): Promise<void> {
  for (let i = 0; i < 10_000 && !pending.settled; i++) {
    invariant();
    if (i % 100 === 99) await settle(1);
    else await Promise.resolve();
  }
  invariant();
  expect(pending.settled).toBe(true);
}

describe('§7.13 race catalogue', () => {
  describe('row 1: peer destroys X while another instance acquires X', () => {
    it('§9.8.150 a reclaim against a peer’s stop in flight cold-starts, and discovery raises instead of handing the container out', async () => {
      const a = await harness();
      const b = await peerOf(a);
      const x = await warmSandbox(a); // A parked X; its warm entry goes stale below
      // B takes the thread over (a later turn on B), parks it, and starts tearing it down.
      expect(await b.provider.acquire(T('t'))).toBe(x);
      await b.provider.release(x);
      a.backendGate.pause('destroy', { times: 1 });
      const teardown = track(b.provider.evictOldestWarm());
      const stop = await a.backendGate.nextCall('destroy');
      expect(a.lease(x)).toBe(`del:${b.ownerId}`);

      const acquire = track(a.provider.acquire(T('t')));
      await expect(acquire.promise).rejects.toMatchObject({ code: BEING_DESTROYED });
      expect(a.provider.get(x)).toBeUndefined();
      expect(a.provider.stateSnapshot().warm).not.toContain(x); // dropped locally, not stopped
      expect(a.backendGate.count('destroy')).toBe(1); // only B's stop, still held

      await stop.release();
      expect(await teardown.promise).toBe(x);
      // Once the stop is over the thread cold-starts on A.
      const fresh = await a.provider.acquire(T('t'));
      expect(fresh).toBe(x);
      expect(a.backend.isRunning(x)).toBe(true);
      expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    });

    it('§9.8.154 a cached reuse of an id a peer is destroying drops it locally and stops nothing', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      const peer = a.peerStore();
      expect(await peer.take(x)).toBe(true);
      expect(await peer.claim(x, { forDestroy: true })).toBe(true);
      const client = clientOf(a, x);
      await expect(a.provider.acquire(T('t'))).rejects.toMatchObject({ code: BEING_DESTROYED });
      expect(a.provider.get(x)).toBeUndefined();
      expect(client.closed).toBe(true);
      expect(a.backend.count('destroy')).toBe(0);
      expect(a.backend.isRunning(x)).toBe(true);
      expect(a.lease(x)).toBe(`del:${peer.ownerId}`);
    });
  });

  describe('row 2: a stop outlives the lease TTL', () => {
    type Path = 'destroy()' | 'warm expiry' | 'unhealthy drop' | 'unready teardown';
    const paths: Path[] = ['destroy()', 'warm expiry', 'unhealthy drop', 'unready teardown'];

    it.each(paths)('§9.8.145 %s keeps del: live for the whole stop (4× TTL)', async (path) => {
      const a = await harness({ config: SHORT_LEASES });
      const peer = a.peerStore();
      let x: string;
      let pending: Promise<unknown>;
      a.backendGate.pause('destroy', { times: 1 });
      if (path === 'destroy()') {
        x = await a.provider.acquire(T('t'));
        pending = a.provider.destroy(x);
      } else if (path === 'warm expiry') {
        x = await warmSandbox(a);
        await a.clock.advance(1_500);
        pending = a.provider.reapExpiredWarm(1);
      } else if (path === 'unhealthy drop') {
        x = await a.provider.acquire(T('t'));
        a.backend.healthOverride.set(x, 'dead');
        pending = a.provider.acquire(T('t'));
      } else {
        a.backend.startUnready = true;
        x = a.provider.sandboxIdFor(T('t'));
        pending = a.provider.acquire(T('t'));
      }
      const outcome = track(pending);
      const stop = await a.backendGate.nextCall('destroy');
      for (let second = 1; second <= 8; second++) {
        await a.clock.advance(1_000);
        expect(a.lease(x)).toBe(`del:${a.ownerId}`);
        expect(await peer.take(x)).toBe(false);
      }
      expect(outcome.settled).toBe(false);
      await stop.release();
      await outcome.promise.catch(() => undefined);
      expect(a.backend.count('destroy', x)).toBe(1);
      if (path === 'unhealthy drop') {
        // The acquire that found it dead went on to start a fresh container, which it owns.
        expect(a.lease(x)).toBe(`own:${a.ownerId}`);
      } else {
        expect(a.lease(x)).toBeUndefined();
        expect(await peer.take(x)).toBe(true);
      }
    });
  });

  describe('row 3: a heartbeat refresh lands after the stop returned', () => {
    it('§9.8.148 the release follows the last refresh, so no del: is left behind', async () => {
      const a = await harness();
      const peer = a.peerStore();
      const x = await a.provider.acquire(T('t'));
      a.backendGate.pause('destroy', { times: 1 });
      const destroy = track(a.provider.destroy(x));
      const stop = await a.backendGate.nextCall('destroy');
      a.store.pause('claim', { times: 1 });
      await a.clock.advance(30_000); // one renewal interval: the heartbeat refreshes
      const refresh = await a.store.nextCall('claim');
      expect(refresh.args).toEqual([x, { forDestroy: true }]);

      await stop.release();
      await settle();
      expect(destroy.settled).toBe(false); // joining the heartbeat, not releasing itself
      expect(a.lease(x)).toBe(`del:${a.ownerId}`);

      await refresh.release(); // the refresh rewrites del:, then the heartbeat releases
      await destroy.promise;
      expect(a.lease(x)).toBeUndefined();
      expect(await peer.take(x)).toBe(true);
    });

    it('a wedged refresh past the 12 s join leaves the release to the heartbeat', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      a.backendGate.pause('destroy', { times: 1 });
      const destroy = track(a.provider.destroy(x));
      const stop = await a.backendGate.nextCall('destroy');
      a.store.pause('claim', { times: 1 });
      await a.clock.advance(30_000);
      const refresh = await a.store.nextCall('claim');
      await stop.release();
      await settle();
      await a.clock.advance(11_999);
      expect(destroy.settled).toBe(false);
      await a.clock.advance(1);
      await destroy.promise;
      expect(a.logger.has('warn', 'heartbeat of sandbox')).toBe(true);
      expect(a.lease(x)).toBe(`del:${a.ownerId}`); // the caller never clears it
      await refresh.release();
      await settle();
      expect(a.lease(x)).toBeUndefined();
    });
  });

  describe('row 4: the destroyer crashes mid-stop', () => {
    it('its del: marker lapses with the TTL and the thread can be acquired again', async () => {
      const a = await harness({ config: SHORT_LEASES });
      const x = await a.provider.acquire(T('t'));
      await a.provider.release(x);
      // A crashed destroyer: wrote del:, never refreshes, never releases.
      const crashed = a.peerStore('crashed-instance');
      expect(await crashed.take(x)).toBe(true);
      expect(await crashed.claim(x, { forDestroy: true })).toBe(true);
      const b = await peerOf(a);
      await expect(b.provider.acquire(T('t'))).rejects.toMatchObject({ code: BEING_DESTROYED });
      await a.clock.advance(2_000); // one TTL
      expect(a.lease(x)).toBeUndefined();
      expect(await b.provider.acquire(T('t'))).toBe(x);
      expect(a.lease(x)).toBe(`own:${b.ownerId}`);
    });
  });

  describe('row 5: the claim is refused for a tracked container', () => {
    it('§9.8.155 destroy() refused by a peer stops nothing and keeps the sandbox tracked with its client open', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      const client = clientOf(a, x);
      expect(await a.peerStore().take(x)).toBe(true);
      await a.provider.destroy(x);
      expect(a.backend.count('destroy')).toBe(0);
      expect(a.provider.get(x)).toBe(client);
      expect(client.closed).toBe(false);
    });

    it('§9.8.149 a warm eviction refused by a peer keeps the warm entry', async () => {
      const a = await harness();
      const x = await warmSandbox(a);
      expect(await a.peerStore().take(x)).toBe(true);
      expect(await a.provider.evictOldestWarm()).toBeUndefined();
      expect(a.provider.stateSnapshot().warm).toEqual([x]);
      expect(a.backend.count('destroy')).toBe(0);
    });

    it('a failed stop keeps the warm entry and still releases the marker', async () => {
      const a = await harness();
      const x = await warmSandbox(a);
      a.backend.failDestroy = new Error('engine timed out');
      await a.clock.advance(601_000);
      expect(await a.provider.reapExpiredWarm()).toEqual([]);
      expect(a.provider.stateSnapshot().warm).toEqual([x]);
      expect(a.lease(x)).toBeUndefined();
      expect(a.backend.isRunning(x)).toBe(true);
    });
  });

  describe('row 6: same-process reclaim vs a warm reaper', () => {
    it.each(['eviction', 'expiry'] as const)(
      '§9.8.159 a %s blocked in its claim: the concurrent reclaim promotes nothing',
      async (reaper) => {
        const a = await harness();
        const x = await warmSandbox(a);
        await a.clock.advance(601_000);
        await a.provider.renewLeases(); // the owner renewed all along
        a.store.pause('claim', { times: 1 });
        const reaping = track<unknown>(
          reaper === 'eviction' ? a.provider.evictOldestWarm() : a.provider.reapExpiredWarm(),
        );
        const claim = await a.store.nextCall('claim');
        expect(claim.args).toEqual([x, { forDestroy: true }]);
        const takes = a.store.count('take');
        await expect(a.provider.acquire(T('t'))).rejects.toMatchObject({ code: BEING_DESTROYED });
        expect(a.store.count('take')).toBe(takes); // reclaim refused before any store call
        expect(a.provider.get(x)).toBeUndefined();
        await claim.release();
        await reaping.promise;
        expect(a.backend.isRunning(x)).toBe(false);
        expect(a.provider.stateSnapshot()).toMatchObject({ active: [], warm: [] });
      },
    );

    it('a reaper reserving while the reclaim publishes: the reclaim re-checks and does not promote', async () => {
      const a = await harness();
      const x = await warmSandbox(a);
      const oldContainer = a.backend.containers.get(x)!.info.containerId;
      a.store.pause('take', { times: 1, phase: 'after' });
      const acquire = track(a.provider.acquire(T('t')));
      const take = await a.store.nextCall('take'); // committed, reply in flight
      const evicted = await a.provider.evictOldestWarm();
      expect(evicted).toBe(x);
      expect(a.backend.isRunning(x)).toBe(false);
      await take.release();
      const id = await acquire.promise;
      // Not the stopped container: a fresh one under the same deterministic id.
      expect(id).toBe(x);
      expect(a.backend.containers.get(x)!.info.containerId).not.toBe(oldContainer);
      expect((a.provider.get(x) as FakeContainerClient).info.containerId).not.toBe(oldContainer);
    });
  });

  describe('row 7: idle destroy vs reuse', () => {
    it('§9.8.160 an idle destroy blocked in its claim: the concurrent reuse does not hand the sandbox out', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      await a.clock.advance(601_000);
      a.store.pause('claim', { times: 1 });
      const idle = track(a.provider.runIdleCheck());
      const claim = await a.store.nextCall('claim');
      await expect(a.provider.acquire(T('t'))).rejects.toMatchObject({ code: BEING_DESTROYED });
      await claim.release();
      await idle.promise;
      expect(a.backend.isRunning(x)).toBe(false);
      expect(a.provider.get(x)).toBeUndefined();
      // The next turn starts afresh.
      expect(await a.provider.acquire(T('t'))).toBe(x);
      expect(a.backend.isRunning(x)).toBe(true);
    });

    it('§9.8.167 activity bumped after the idle snapshot spares the sandbox (the predicate runs at reservation)', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t1'));
      const y = await a.provider.acquire(T('t2'));
      await a.clock.advance(601_000);
      a.store.pause('claim', { times: 1 });
      const idle = track(a.provider.runIdleCheck());
      const claim = await a.store.nextCall('claim');
      const first = claim.args[0];
      const other = first === x ? y : x;
      a.provider.get(other); // a tool call on the other sandbox, after the snapshot
      await claim.release();
      await idle.promise;
      expect(a.backend.isRunning(first as string)).toBe(false);
      expect(a.backend.isRunning(other)).toBe(true);
      expect(a.provider.get(other)).toBeDefined();
    });

    it('a sandbox with a lease-manager holder is not idle-destroyed', async () => {
      const { getSandboxLeaseManager } = await import('@sbx/core');
      const a = await harness();
      const manager = getSandboxLeaseManager(a.provider);
      const x = await manager.acquire('owner-1', T('t'));
      await a.clock.advance(601_000);
      await a.provider.runIdleCheck();
      expect(a.backend.isRunning(x)).toBe(true);
      expect(a.provider.get(x)).toBeDefined();
    });
  });

  describe('row 8: a reaper reserves during reuse’s health check', () => {
    it('§9.8.161 reuse does not return the reserved id; the reaper stops it exactly once', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      await a.clock.advance(601_000);
      a.backendGate.pause('checkHealth', { times: 1 });
      const acquire = track(a.provider.acquire(T('t')));
      const health = await a.backendGate.nextCall('checkHealth');
      // The idle reaper reserves X (still idle: the acquire has not bumped it yet) and claims.
      a.store.pause('claim', { times: 1 });
      const idle = track(a.provider.runIdleCheck());
      const claim = await a.store.nextCall('claim');
      expect(a.provider.isTearingDown(x)).toBe(true);
      await health.release();
      await expect(acquire.promise).rejects.toMatchObject({ code: BEING_DESTROYED });
      await claim.release();
      await idle.promise;
      expect(a.backend.count('destroy', x)).toBe(1);
      expect(a.provider.get(x)).toBeUndefined();
    });
  });

  describe('row 9: the gap between the stop returning and the warm pop', () => {
    it('§9.8.171 no dead warm entry is ever visible unreserved', async () => {
      const a = await harness();
      const x = await warmSandbox(a);
      a.backendGate.pause('destroy', { times: 1, phase: 'after' });
      const evict = track(a.provider.evictOldestWarm());
      const stop = await a.backendGate.nextCall('destroy');
      expect(a.backend.isRunning(x)).toBe(false); // the stop itself is done
      const deadWarmEntryIsReserved = () => {
        if (a.provider.stateSnapshot().warm.includes(x))
          expect(a.provider.isTearingDown(x)).toBe(true);
      };
      deadWarmEntryIsReserved();
      void stop.release();
      await stepUntilSettled(evict, deadWarmEntryIsReserved);
      expect(a.provider.stateSnapshot().warm).toEqual([]);
      expect(a.provider.isTearingDown(x)).toBe(false);
    });
  });

  describe('row 10: renewal LOST vs this instance re-acquiring', () => {
    it('§9.8.164 a renewal LOST held while reuse re-takes: the sandbox stays and the lease is ours', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      expect(await a.peerStore().take(x)).toBe(true);
      a.store.pause('renew', { times: 1, phase: 'after' });
      const renewal = track(a.provider.renewLeases());
      const renew = await a.store.nextCall('renew');
      expect(renew.outcome).toEqual({ status: 'fulfilled', value: RenewOutcome.LOST });
      expect(await a.provider.acquire(T('t'))).toBe(x); // reuse re-publishes: epoch moves
      await renew.release();
      await renewal.promise;
      expect(a.provider.get(x)).toBeDefined();
      expect(clientOf(a, x).closed).toBe(false);
      expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    });
  });

  describe('row 11: renewal LOST vs a take committed but not yet returned', () => {
    it('§9.8.168 the intent mark keeps the forget off; acquire returns an id whose get() is not undefined', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      expect(await a.peerStore().take(x)).toBe(true);
      a.store.pause('renew', { times: 1, phase: 'after' });
      const renewal = track(a.provider.renewLeases());
      const renew = await a.store.nextCall('renew'); // LOST, decided before our take
      a.store.pause('take', { times: 1, phase: 'after' });
      const acquire = track(a.provider.acquire(T('t')));
      const take = await a.store.nextCall('take');
      expect(a.lease(x)).toBe(`own:${a.ownerId}`); // durable before take() returns
      await renew.release(); // the stale LOST reaches the forget now: same epoch, but marked
      await renewal.promise;
      expect(a.provider.stateSnapshot().active).toContain(x);
      await take.release();
      expect(await acquire.promise).toBe(x);
      expect(a.provider.get(x)).toBeDefined();
      expect(clientOf(a, x).closed).toBe(false);
    });
  });

  describe('row 12: the entry is forgotten before the intent mark', () => {
    it('§9.8.169 reuse re-checks membership after publishing and falls through to a live client', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      const first = clientOf(a, x);
      expect(await a.peerStore().take(x)).toBe(true);
      a.store.pause('renew', { times: 1, phase: 'after' });
      const renewal = track(a.provider.renewLeases());
      const renew = await a.store.nextCall('renew');
      a.backendGate.pause('checkHealth', { times: 1 });
      const acquire = track(a.provider.acquire(T('t')));
      const health = await a.backendGate.nextCall('checkHealth');
      await renew.release(); // no mark yet: the forget is legitimate and happens
      await renewal.promise;
      expect(a.provider.get(x)).toBeUndefined();
      expect(first.closed).toBe(true);
      await health.release();
      expect(await acquire.promise).toBe(x);
      const client = clientOf(a, x);
      expect(client).toBeDefined();
      expect(client).not.toBe(first);
      expect(client.closed).toBe(false);
      expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    });
  });

  describe('row 13: reconciliation meets a container being torn down', () => {
    it('§9.8.170 an unhealthy drop before its claim: reconciliation defers instead of adopting', async () => {
      const a = await harness(); // memory store: adoption would be instant
      const x = await a.provider.acquire(T('t'));
      a.backend.healthOverride.set(x, 'dead'); // still listed as running
      a.store.pause('claim', { times: 1 });
      const acquire = track(a.provider.acquire(T('t')));
      const claim = await a.store.nextCall('claim');
      expect(a.provider.stateSnapshot().active).not.toContain(x);
      const claims = a.store.count('claim');
      const summary = await a.provider.reconcile();
      expect(summary.deferred).toEqual([x]);
      expect(a.store.count('claim')).toBe(claims); // deferred before any claim
      expect(a.provider.stateSnapshot().warm).toEqual([]);
      await claim.release();
      a.backend.healthOverride.delete(x);
      expect(await acquire.promise).toBe(x);
      expect(a.backend.count('destroy', x)).toBe(1);
    });

    it('§9.7.124 an unready teardown before its claim: reconciliation defers, then adopts nothing stale', async () => {
      const a = await harness();
      a.backend.startUnready = true;
      const x = a.provider.sandboxIdFor(T('t'));
      a.store.pause('claim', { times: 1 });
      const acquire = track(a.provider.acquire(T('t')));
      const claim = await a.store.nextCall('claim');
      expect((await a.provider.reconcile()).deferred).toEqual([x]);
      await claim.release();
      await expect(acquire.promise).rejects.toThrow(/failed to become ready/);
      expect(a.provider.isTearingDown(x)).toBe(false);
      expect(a.provider.stateSnapshot().warm).toEqual([]);
      // Control: with no teardown in flight, an untracked running container is adopted.
      a.backend.startExternal('c0ffee0123456789');
      expect((await a.provider.reconcile()).adopted).toEqual(['c0ffee0123456789']);
    });
  });

  describe('row 14: reconciliation adopts inside a register’s publish → track window', () => {
    it.each(['created', 'discovered'] as const)(
      '§9.8.174/175 the %s register drops the adopted warm entry; expiry never stops the active container',
      async (path) => {
        const a = await harness();
        const x = a.provider.sandboxIdFor(T('t'));
        if (path === 'discovered') a.backend.startExternal(x);
        a.store.pause('take', { times: 1 });
        const acquire = track(a.provider.acquire(T('t')));
        const take = await a.store.nextCall('take');
        expect((await a.provider.reconcile()).adopted).toEqual([x]);
        expect(a.provider.stateSnapshot().warm).toEqual([x]);
        await take.release();
        expect(await acquire.promise).toBe(x);
        expect(a.provider.stateSnapshot()).toMatchObject({ active: [x], warm: [] });
        await a.clock.advance(601_000);
        a.provider.get(x); // in use
        expect(await a.provider.reapExpiredWarm()).toEqual([]);
        expect(a.backend.isRunning(x)).toBe(true);
        expect(a.provider.get(x)).toBeDefined();
      },
    );
  });

  describe('row 15: the store loses every key while the owners are alive', () => {
    it('§9.8.141 renewal re-establishes the lapsed leases; nothing is dropped or destroyed', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t1'));
      const y = await warmSandbox(a, 't2');
      a.table.clear(); // FLUSHALL, or a restart without persistence
      await a.provider.renewLeases();
      expect(a.lease(x)).toBe(`own:${a.ownerId}`);
      expect(a.lease(y)).toBe(`own:${a.ownerId}`);
      expect(a.provider.stateSnapshot()).toMatchObject({ active: [x], warm: [y] });
      expect(a.backend.count('destroy')).toBe(0);
    });
  });

  describe('row 16: a peer reconciles right after a flush', () => {
    it('§9.8.142 the grace keeps it from adopting live containers; the owner keeps sandbox and lease', async () => {
      const a = await harness({ crossProcess: true });
      const b = await peerOf(a);
      const x = await a.provider.acquire(T('t1'));
      const y = await warmSandbox(a, 't2');
      a.table.clear();
      const first = await b.provider.reconcile();
      expect(first.adopted).toEqual([]);
      expect(first.deferred.sort()).toEqual([x, y].sort());
      // The owner's ticks, each within one interval; the peer looks again a full TTL later.
      for (let tick = 0; tick < 4; tick++) {
        await a.clock.advance(30_000);
        await a.provider.renewLeases();
      }
      const second = await b.provider.reconcile();
      expect(second.adopted).toEqual([]);
      expect(b.provider.stateSnapshot().warm).toEqual([]);
      expect(a.provider.stateSnapshot()).toMatchObject({ active: [x], warm: [y] });
      expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    });

    it('§9.8.143 a republished lease resets the grace; a later lapse needs a fresh full grace', async () => {
      const a = await harness({ crossProcess: true });
      const b = await peerOf(a);
      const x = await a.provider.acquire(T('t'));
      a.table.clear();
      expect((await b.provider.reconcile()).deferred).toEqual([x]); // grace starts
      await a.clock.advance(60_000);
      await a.provider.renewLeases(); // republished
      expect((await b.provider.reconcile()).deferred).toEqual([x]); // owned: timer dropped
      await a.clock.advance(60_000);
      a.table.clear(); // lapses again: 120 s after the first sighting
      expect((await b.provider.reconcile()).adopted).toEqual([]); // a fresh grace starts now
      await a.clock.advance(119_999);
      expect((await b.provider.reconcile()).adopted).toEqual([]);
      await a.clock.advance(1);
      expect((await b.provider.reconcile()).adopted).toEqual([x]);
      expect(a.lease(x)).toBe(`own:${b.ownerId}`);
    });
  });

  describe('row 17: store outage', () => {
    it('§9.8.135 renewal is fail-open on both round trips: renew raising, and LAPSED with the re-claim raising', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t1'));
      const y = await warmSandbox(a, 't2');
      a.faults.fail('renew');
      await a.provider.renewLeases();
      expect(a.provider.stateSnapshot()).toMatchObject({ active: [x], warm: [y] });
      a.faults.heal();
      a.table.clear();
      a.faults.fail('claim');
      await a.provider.renewLeases();
      expect(a.provider.stateSnapshot()).toMatchObject({ active: [x], warm: [y] });
      expect(a.store.calls('claim').map((c) => c.args)).toContainEqual([x]); // plain claim
    });

    it('§9.8.133 reaping and adoption are fail-closed: nothing stopped, nothing adopted', async () => {
      const a = await harness();
      const x = await warmSandbox(a);
      a.backend.startExternal('0123456789abcdef');
      a.faults.fail('claim');
      expect(await a.provider.evictOldestWarm()).toBeUndefined();
      await a.clock.advance(601_000);
      expect(await a.provider.reapExpiredWarm()).toEqual([]);
      expect((await a.provider.reconcile()).adopted).toEqual([]);
      expect(a.backend.isRunning(x)).toBe(true);
      expect(a.provider.stateSnapshot().warm).toEqual([x]);
    });

    it('§9.8.131 publishing is fail-closed: a new sandbox whose lease cannot be written is stopped', async () => {
      const a = await harness();
      a.faults.fail('take');
      await expect(a.provider.acquire(T('t'))).rejects.toBeInstanceOf(OwnershipBackendError);
      const x = a.provider.sandboxIdFor(T('t'));
      expect(a.backend.isRunning(x)).toBe(false);
      expect(a.provider.get(x)).toBeUndefined();
      expect(a.backend.clients.at(-1)?.closed).toBe(true);
    });
  });

  describe('row 18: a non-destroy claim meets our own del:', () => {
    it('§9.6.95 the teardown marker is never downgraded (store), and renewal mid-teardown neither drops nor downgrades', async () => {
      const a = await harness();
      const x = await warmSandbox(a);
      a.backendGate.pause('destroy', { times: 1 });
      const evict = track(a.provider.evictOldestWarm());
      const stop = await a.backendGate.nextCall('destroy');
      expect(await a.store.proxy.claim(x)).toBe(false);
      expect(a.lease(x)).toBe(`del:${a.ownerId}`);
      await a.provider.renewLeases();
      expect(a.lease(x)).toBe(`del:${a.ownerId}`);
      expect(a.provider.stateSnapshot().warm).toEqual([x]);
      expect(await a.peerStore().take(x)).toBe(false);
      await stop.release();
      expect(await evict.promise).toBe(x);
    });
  });

  describe('row 19: an unready container is visible to peers during its readiness wait', () => {
    it('§9.7.122 the unready teardown stops it exactly once, under this instance’s del:', async () => {
      const a = await harness();
      a.backend.startUnready = true;
      const x = a.provider.sandboxIdFor(T('t'));
      a.backendGate.pause('destroy', { times: 1 });
      const acquire = track(a.provider.acquire(T('t')));
      const stop = await a.backendGate.nextCall('destroy');
      expect(a.lease(x)).toBe(`del:${a.ownerId}`);
      await stop.release();
      await expect(acquire.promise).rejects.toThrow(`Sandbox ${x} failed to become ready`);
      expect(a.backend.count('destroy', x)).toBe(1);
    });

    it('a peer that took it meanwhile keeps it: nothing is stopped', async () => {
      const a = await harness();
      a.backend.startUnready = true;
      const x = a.provider.sandboxIdFor(T('t'));
      a.backendGate.pause('readinessProbe', { times: 1 });
      const acquire = track(a.provider.acquire(T('t')));
      const probe = await a.backendGate.nextCall('readinessProbe');
      const peer = a.peerStore();
      expect(await peer.take(x)).toBe(true); // a peer discovered and handed it out
      await probe.release();
      await expect(acquire.promise).rejects.toThrow(/failed to become ready/);
      expect(a.backend.count('destroy')).toBe(0);
      expect(a.backend.isRunning(x)).toBe(true);
      expect(a.lease(x)).toBe(`own:${peer.ownerId}`);
    });
  });

  describe('row 20: release() LOST vs the next turn’s reclaim', () => {
    it('§9.8.165 the release’s forget skips the re-acquired entry (epoch)', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      expect(await a.peerStore().take(x)).toBe(true);
      a.store.pause('renew', { times: 1, phase: 'after' });
      const release = track(a.provider.release(x));
      const renew = await a.store.nextCall('renew');
      expect(await a.provider.acquire(T('t'))).toBe(x); // reclaim re-takes
      await renew.release();
      await release.promise;
      expect(a.provider.stateSnapshot().active).toEqual([x]);
      expect(clientOf(a, x).closed).toBe(false);
      expect(a.lease(x)).toBe(`own:${a.ownerId}`);
    });
  });

  describe('row 21: a warm teardown entry vs renewal LOST on our own del:', () => {
    it('§9.8.138 renewal does not pop the retained entry; the failed stop keeps it', async () => {
      const a = await harness();
      const x = await warmSandbox(a);
      a.backend.failDestroy = new Error('stop failed');
      a.backendGate.pause('destroy', { times: 1 });
      await a.clock.advance(601_000);
      const reap = track(a.provider.reapExpiredWarm());
      const stop = await a.backendGate.nextCall('destroy');
      await a.provider.renewLeases(); // renew → LOST (our del:)
      expect(a.provider.stateSnapshot().warm).toEqual([x]);
      await stop.release();
      expect(await reap.promise).toEqual([]);
      expect(a.provider.stateSnapshot().warm).toEqual([x]);
      expect(a.backend.isRunning(x)).toBe(true);
    });
  });

  describe('row 22: idle_timeout 0', () => {
    it.each([0, 600])(
      '§9.8.134 leases are renewed with idle_timeout %i; the idle checker runs only when > 0',
      async (idle) => {
        const a = await harness({ config: { idle_timeout: idle }, background: true });
        await warmSandbox(a);
        expect(a.provider.renewalRunning).toBe(true);
        expect(a.provider.idleCheckerRunning).toBe(idle > 0);
        const before = a.store.count('renew');
        await a.clock.advance(30_000);
        expect(a.store.count('renew')).toBeGreaterThan(before);
      },
    );
  });

  describe('row 23: event-loop blocking', () => {
    it('§9.7.113 get() is answered in memory while every store and backend call would block forever', async () => {
      const a = await harness();
      const x = await a.provider.acquire(T('t'));
      for (const m of ['take', 'claim', 'renew', 'release', 'owner'] as const) a.store.pause(m);
      for (const m of ['checkHealth', 'discover', 'listRunning', 'create', 'destroy'] as const) {
        a.backendGate.pause(m);
      }
      const storeCalls = a.store.calls().length;
      const backendCalls = a.backendGate.calls().length;
      const got = a.provider.get(x);
      expect(got).toBeDefined();
      expect(got).not.toBeInstanceOf(Promise);
      expect(a.store.calls().length).toBe(storeCalls);
      expect(a.backendGate.calls().length).toBe(backendCalls);
      a.store.resume();
      a.backendGate.resume();
    });
  });

  describe('row 24: a truncated id collides across tenants', () => {
    class CollidingProvider extends AioSandboxProvider {
      override sandboxIdFor(): string {
        return 'a1b2c3d4e5f60718';
      }
    }

    it('§9.7.121 tenant B gets SandboxIdentityCollisionError; tenant A’s warm entry is untouched', async () => {
      const a = await harness({ providerClass: CollidingProvider });
      const id = await a.provider.acquire({ userId: 'alice', threadId: 't' });
      await a.provider.release(id);
      const info = a.backend.containers.get(id)!.info;
      await expect(a.provider.acquire({ userId: 'bob', threadId: 't' })).rejects.toBeInstanceOf(
        SandboxIdentityCollisionError,
      );
      expect(a.provider.stateSnapshot().warm).toEqual([id]);
      expect(a.backend.count('destroy')).toBe(0);
      expect(a.backend.count('create')).toBe(1);
      expect(await a.provider.acquire({ userId: 'alice', threadId: 't' })).toBe(id);
      expect((a.provider.get(id) as FakeContainerClient).info.containerId).toBe(info.containerId);
      // Active too: bob is refused while alice holds it.
      await expect(a.provider.acquire({ userId: 'bob', threadId: 't' })).rejects.toBeInstanceOf(
        SandboxIdentityCollisionError,
      );
    });
  });

  describe('row 25: a created container cannot be owned', () => {
    it('§9.8.151 a refused take (a dead destroyer’s del:) stops the fresh container and raises', async () => {
      const a = await harness();
      const x = a.provider.sandboxIdFor(T('t'));
      expect(await a.peerStore().claim(x, { forDestroy: true })).toBe(true);
      await expect(a.provider.acquire(T('t'))).rejects.toMatchObject({ code: BEING_DESTROYED });
      expect(a.backend.count('create', x)).toBe(1);
      expect(a.backend.isRunning(x)).toBe(false);
      expect(a.provider.get(x)).toBeUndefined();
      expect(a.backend.clients.at(-1)?.closed).toBe(true);
    });
  });

  describe('row 26: a stale health verdict meets a recreated entry', () => {
    it('§9.7.116 the unhealthy drop compares info identity and leaves the fresh entry (and its container) alone', async () => {
      const a = await harness();
      const x = await warmSandbox(a);
      a.backendGate.pause('checkHealth', { times: 1 });
      const acquire = track(a.provider.acquire(T('t')));
      const health = await a.backendGate.nextCall('checkHealth');
      // Meanwhile the entry is recreated: the lease moves away and back, and reconciliation
      // re-adopts the container with a fresh info.
      const peer = a.peerStore();
      expect(await peer.take(x)).toBe(true);
      await a.provider.renewLeases();
      expect(a.provider.stateSnapshot().warm).toEqual([]);
      await peer.release(x);
      expect((await a.provider.reconcile()).adopted).toEqual([x]);
      a.backend.healthOverride.set(x, 'dead'); // the stale verdict about the old entry
      await health.release();
      a.backend.healthOverride.delete(x);
      expect(await acquire.promise).toBe(x);
      expect(a.backend.count('destroy')).toBe(0);
      expect(a.backend.isRunning(x)).toBe(true);
    });
  });

  describe('row 27: shutdown with a shared warm pool', () => {
    it('§9.8.152 stops our warm container, never a peer-owned one', async () => {
      const a = await harness();
      const mine = await warmSandbox(a, 't1');
      const theirs = await warmSandbox(a, 't2');
      expect(await a.peerStore().take(theirs)).toBe(true);
      await a.provider.shutdown();
      expect(a.backend.isRunning(mine)).toBe(false);
      expect(a.backend.isRunning(theirs)).toBe(true);
    });
  });

  describe('row 28: concurrent acquires of one thread', () => {
    it('eight concurrent acquires in one instance converge on one container', async () => {
      const a = await harness();
      const ids = await Promise.all(Array.from({ length: 8 }, () => a.provider.acquire(T('t'))));
      expect(new Set(ids).size).toBe(1);
      expect(a.backend.count('create')).toBe(1);
    });

    it('two instances creating at once end with one container (the name conflict adopts it)', async () => {
      const a = await harness();
      const b = await peerOf(a);
      a.backendGate.pause('create', { times: 2 });
      const both = Promise.all([a.provider.acquire(T('t')), b.provider.acquire(T('t'))]);
      const first = await a.backendGate.nextCall('create');
      const second = await a.backendGate.nextCall('create');
      await first.release();
      await second.release();
      const [ia, ib] = await both;
      expect(ia).toBe(ib);
      expect(a.backend.containers.size).toBe(1);
    });
  });
});
