import { OwnershipBackendError, SandboxIdentityCollisionError } from '@sbx/core';
import { track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';
import { AioSandboxProvider } from './aio-sandbox-provider.js';

// The acquire paths' guards: a take that cannot be answered is not a teardown marker (the acquire
// fails and this instance keeps what it tracks; only a `del:` makes the path start afresh); the
// checks before the first await, and those taken again after the take.

const BEING_DESTROYED = 'SANDBOX_BEING_DESTROYED';
const { harness } = harnessContext();

describe('a store error on the acquire paths', () => {
  it('reuse: the take failing raises, and the active sandbox stays tracked and mapped', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const discovered = h.backend.count('discover');
    h.faults.fail('take');
    await expect(h.provider.acquire(T('t'))).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(h.provider.get(id)).toBeDefined();
    expect(Object.values(h.provider.stateSnapshot().threads)).toEqual([id]);
    // Not forgotten and looked up afresh: no discovery of the container it already tracks.
    expect(h.backend.count('discover')).toBe(discovered);
    h.faults.heal();
    expect(await h.provider.acquire(T('t'))).toBe(id);
    expect(h.backend.count('create')).toBe(1);
  });

  it('reclaim: the take failing raises, and the warm entry stays parked', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    await h.provider.release(id);
    const discovered = h.backend.count('discover');
    h.faults.fail('take');
    await expect(h.provider.acquire(T('t'))).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(h.provider.stateSnapshot().warm).toEqual([id]);
    expect(h.backend.count('discover')).toBe(discovered);
    h.faults.heal();
    expect(await h.provider.acquire(T('t'))).toBe(id);
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [id], warm: [] });
  });
});

/** Every thread maps to one id: what a hash collision between two tenants would do. */
class CollidingProvider extends AioSandboxProvider {
  override sandboxIdFor(): string {
    return 'a1b2c3d4e5f60718';
  }
}

describe('checks taken before the first await of an acquire', () => {
  it('another tenant’s active sandbox is refused at once, even when discovery cannot answer: nothing is created over it or stopped', async () => {
    const h = await harness({ providerClass: CollidingProvider });
    const id = await h.provider.acquire({ userId: 'alice', threadId: 't' });
    h.backend.discover = async () => {
      throw new Error('engine unreachable');
    };
    await expect(h.provider.acquire({ userId: 'bob', threadId: 't' })).rejects.toBeInstanceOf(
      SandboxIdentityCollisionError,
    );
    expect(h.backend.isRunning(id)).toBe(true);
    expect(h.backend.count('create')).toBe(1);
    expect(h.backend.count('destroy')).toBe(0);
    expect(h.provider.get(id)).toBeDefined();
  });

  it('reuse of an id a teardown here holds makes no health check and no take', async () => {
    const h = await harness();
    await h.provider.acquire(T('t'));
    await h.clock.advance(601_000);
    h.store.pause('claim', { times: 1 });
    const idle = track(h.provider.runIdleCheck());
    const claim = await h.store.nextCall('claim');
    const health = h.backend.count('checkHealth');
    const takes = h.store.count('take');
    await expect(h.provider.acquire(T('t'))).rejects.toMatchObject({ code: BEING_DESTROYED });
    await claim.release();
    await idle.promise;
    expect(h.backend.count('checkHealth')).toBe(health);
    expect(h.store.count('take')).toBe(takes);
  });

  it('a warm container adopted without a published port is not reclaimed: discovery looks for it instead', async () => {
    const h = await harness();
    const id = h.provider.sandboxIdFor(T('t'));
    const info = h.backend.startExternal(id);
    (info as { sandboxUrl: string }).sandboxUrl = '';
    expect((await h.provider.reconcile()).adopted).toEqual([id]);
    const paths: string[] = [];
    h.provider.onEvent((e) => {
      if (e.type === 'acquire') paths.push(e.path);
    });
    const health = h.backend.count('checkHealth');
    expect(await h.provider.acquire(T('t'))).toBe(id);
    expect(paths).toEqual(['discover']);
    expect(h.backend.count('checkHealth')).toBe(health);
  });
});

describe('checks taken again after an acquire’s take', () => {
  it('a reclaim whose take returns while the warm reaper is stopping the sandbox does not promote it', async () => {
    const h = await harness();
    const x = await h.provider.acquire(T('t'));
    await h.provider.release(x);
    h.store.pause('take', { times: 1, phase: 'after' });
    const acquire = track(h.provider.acquire(T('t')));
    const take = await h.store.nextCall('take'); // committed, reply in flight
    h.backendGate.pause('destroy', { times: 1 });
    const evict = track(h.provider.evictOldestWarm());
    const stop = await h.backendGate.nextCall('destroy'); // reserved, entry still parked
    await take.release();
    await expect(acquire.promise).rejects.toMatchObject({ code: BEING_DESTROYED });
    expect(h.provider.get(x)).toBeUndefined();
    await stop.release();
    expect(await evict.promise).toBe(x);
    expect(h.backend.isRunning(x)).toBe(false);
  });

  it('an unhealthy verdict landing while a warm stop runs does not stop the container a second time', async () => {
    const h = await harness();
    const x = await h.provider.acquire(T('t'));
    await h.provider.release(x);
    h.backend.healthOverride.set(x, 'dead');
    h.backendGate.pause('checkHealth', { times: 1 });
    const acquire = track(h.provider.acquire(T('t')));
    const health = await h.backendGate.nextCall('checkHealth');
    h.backendGate.pause('destroy', { times: 1 });
    const evict = track(h.provider.evictOldestWarm());
    const stop = await h.backendGate.nextCall('destroy');
    await health.release();
    await expect(acquire.promise).rejects.toMatchObject({ code: BEING_DESTROYED });
    await stop.release();
    expect(await evict.promise).toBe(x);
    expect(h.backend.count('destroy', x)).toBe(1);
  });
});

describe('re-checks after the health check and the take that no earlier check makes redundant', () => {
  it('reuse: an entry a LOST renewal forgot during the health check gets no take, so an acquire failing later leaves the peer its lease', async () => {
    const h = await harness();
    const x = await h.provider.acquire(T('t'));
    const peer = h.peerStore();
    expect(await peer.take(x)).toBe(true); // a turn on another instance took it
    h.backendGate.pause('checkHealth', { times: 1 });
    const acquire = track(h.provider.acquire(T('t')));
    const health = await h.backendGate.nextCall('checkHealth');
    await h.provider.renewLeases(); // LOST: forgotten here (no take of this acquire yet)
    expect(h.provider.get(x)).toBeUndefined();
    const unreachable = new Error('engine unreachable');
    h.backend.discover = async () => {
      throw unreachable;
    };
    h.backend.create = async () => {
      throw unreachable;
    };
    await health.release();
    await expect(acquire.promise).rejects.toBe(unreachable);
    // The take of an id this instance no longer tracks would have left a lease nothing renews
    // and cut the peer's turn (its next renewal would read LOST).
    expect(h.lease(x)).toBe(`own:${peer.ownerId}`);
    expect(h.backend.isRunning(x)).toBe(true);
  });

  it('reclaim: a warm entry another tenant parked during the health check and the take is refused, not handed over', async () => {
    const h = await harness({ providerClass: CollidingProvider });
    const alice = { userId: 'alice', threadId: 't' };
    const bob = { userId: 'bob', threadId: 't' };
    const x = await h.provider.acquire(alice);
    await h.provider.release(x);
    h.backendGate.pause('checkHealth', { times: 1 });
    const reclaim = track(h.provider.acquire(alice));
    const health = await h.backendGate.nextCall('checkHealth');
    // Meanwhile alice's entry is forgotten (a peer took it) and bob's turn parks the same id.
    expect(await h.peerStore().take(x)).toBe(true);
    await h.provider.renewLeases();
    expect(h.provider.stateSnapshot().warm).toEqual([]);
    expect(await h.provider.acquire(bob)).toBe(x);
    await h.provider.release(x);
    expect(h.provider.stateSnapshot().warm).toEqual([x]);
    await health.release();
    await expect(reclaim.promise).rejects.toBeInstanceOf(SandboxIdentityCollisionError);
    expect(h.provider.get(x)).toBeUndefined();
    expect(h.provider.stateSnapshot().warm).toEqual([x]);
    expect(await h.provider.acquire(bob)).toBe(x);
  });

  it('discover: landing on an id still active here (a refused stop kept it) closes the client it replaces', async () => {
    const h = await harness();
    const x = await h.provider.acquire(T('t'));
    const first = h.backend.clients.at(-1)!;
    expect(await h.peerStore().take(x)).toBe(true);
    h.store.pause('claim', { times: 1 });
    const destroy = track(h.provider.destroy(x));
    const claim = await h.store.nextCall('claim'); // reserved here; the peer holds the lease
    h.backendGate.pause('discover', { times: 1 });
    const acquire = track(h.provider.acquire(T('t'))); // reuse refuses the reserved id
    const discover = await h.backendGate.nextCall('discover');
    await claim.release(); // refused: the entry stays active, the reservation ends
    await destroy.promise;
    expect(h.provider.get(x)).toBe(first);
    await discover.release();
    expect(await acquire.promise).toBe(x);
    expect(h.provider.get(x)).not.toBe(first);
    expect(first.closed).toBe(true);
    expect(h.lease(x)).toBe(`own:${h.ownerId}`);
  });
});

describe('a new container whose readiness probe throws', () => {
  it('is stopped under this instance’s marker and the acquire fails', async () => {
    const h = await harness();
    h.backend.readinessProbe = async () => {
      throw new Error('probe broke');
    };
    const x = h.provider.sandboxIdFor(T('t'));
    await expect(h.provider.acquire(T('t'))).rejects.toThrow('probe broke');
    expect(h.backend.isRunning(x)).toBe(false);
    expect(h.backend.count('destroy', x)).toBe(1);
    expect(h.lease(x)).toBeUndefined();
  });
});

describe('release after shutdown began', () => {
  it('parks the sandbox and makes no store call', async () => {
    const h = await harness();
    const x = await h.provider.acquire(T('t'));
    h.backendGate.pause('create', { times: 1 });
    const other = track(h.provider.acquire(T('other')));
    const create = await h.backendGate.nextCall('create');
    const shutdown = track(h.provider.shutdown()); // waits for the acquire in flight
    const renews = h.store.count('renew');
    await h.provider.release(x);
    expect(h.store.count('renew')).toBe(renews);
    await create.release();
    await other.promise;
    await shutdown.promise;
    expect(h.backend.isRunning(x)).toBe(false);
  });
});
