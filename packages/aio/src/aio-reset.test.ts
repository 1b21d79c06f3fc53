import { settle, track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';

// reset() hands everything over to a replacement without stopping a container. What it must not
// hand over: the `del:` marker of a stop still in flight here. What it must not leave behind: a
// sandbox an acquire or an adoption in flight installs after the hand-over, whose lease nothing
// would renew or release.

const { harness } = harnessContext();

describe('reset()', () => {
  it('keeps the del: marker of a warm stop in flight until that stop ends', async () => {
    const h = await harness();
    const x = await h.provider.acquire(T('t'));
    await h.provider.release(x);
    h.backendGate.pause('destroy', { times: 1 });
    const evict = track(h.provider.evictOldestWarm());
    const stop = await h.backendGate.nextCall('destroy');
    await h.provider.reset();
    expect(h.lease(x)).toBe(`del:${h.ownerId}`);
    // Nobody may hand out a container that is being stopped.
    expect(await h.peerStore().take(x)).toBe(false);
    await stop.release();
    expect(await evict.promise).toBe(x);
    expect(h.backend.isRunning(x)).toBe(false);
    expect(h.lease(x)).toBeUndefined();
  });

  it('waits for an acquire in flight, then hands over what it produced', async () => {
    const h = await harness();
    h.backendGate.pause('create', { times: 1 });
    const acquire = track(h.provider.acquire(T('t')));
    const create = await h.backendGate.nextCall('create');
    const reset = track(h.provider.reset());
    await settle();
    const settledEarly = reset.settled;
    await create.release();
    expect(settledEarly).toBe(false);
    const id = await acquire.promise;
    await reset.promise;
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [], warm: [] });
    expect(h.lease(id)).toBeUndefined();
    expect(h.backend.isRunning(id)).toBe(true);
  });

  it('waits for a reconciliation pass in flight, then hands over what it adopted', async () => {
    const h = await harness();
    const id = h.provider.sandboxIdFor(T('orphan'));
    h.backend.startExternal(id);
    h.store.pause('claim', { times: 1 });
    const pass = track(h.provider.reconcile());
    const claim = await h.store.nextCall('claim');
    const reset = track(h.provider.reset());
    await settle();
    const settledEarly = reset.settled;
    await claim.release();
    expect(settledEarly).toBe(false);
    expect((await pass.promise).adopted).toEqual([id]);
    await reset.promise;
    expect(h.provider.stateSnapshot().warm).toEqual([]);
    expect(h.lease(id)).toBeUndefined();
    expect(h.backend.isRunning(id)).toBe(true);
  });
  it('a destroy in flight whose entry reset() handed over clears the del: marker it wrote', async () => {
    const h = await harness();
    const x = await h.provider.acquire(T('t'));
    h.store.pause('claim', { times: 1, phase: 'after' });
    const destroy = track(h.provider.destroy(x));
    const claim = await h.store.nextCall('claim'); // del: written, answer in flight
    await h.provider.reset();
    await claim.release();
    await destroy.promise;
    // Nothing left to stop here (the container was handed over); the marker must not outlive it.
    expect(h.lease(x)).toBeUndefined();
    expect(h.backend.isRunning(x)).toBe(true);
  });
});
