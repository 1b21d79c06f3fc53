import { describe, expect, it } from 'vitest';
import { MemoryLeaseTable, MemoryOwnershipStore } from './memory-ownership-store.js';
import { withHeldTeardownLease } from './teardown-lease.js';
import { Deferred, settle, track } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import { pausable } from '../testing/pausable.js';
import { recordingLogger } from '../testing/recording-logger.js';

const ID = 'sbx-teardown-1';
const INTERVAL_MS = 10_000;
const TTL_SECONDS = 30;

function setup() {
  const clock = new ManualClock(1_000_000);
  const table = new MemoryLeaseTable({ clock });
  const ours = new MemoryOwnershipStore({ table, ttlSeconds: TTL_SECONDS, ownerId: 'ours' });
  const peer = new MemoryOwnershipStore({ table, ttlSeconds: TTL_SECONDS, ownerId: 'peer' });
  const logger = recordingLogger();
  return { clock, table, ours, peer, logger };
}

describe('withHeldTeardownLease', () => {
  it('keeps a peer out for as long as the stop runs, well past the lease TTL', async () => {
    const { clock, ours, peer, logger } = setup();
    expect(await ours.claim(ID, { forDestroy: true })).toBe(true);
    const stop = new Deferred<string>();
    const run = track(
      withHeldTeardownLease(
        { store: ours, sandboxId: ID, intervalMs: INTERVAL_MS, clock, logger },
        () => stop.promise,
      ),
    );
    // Four TTLs: without the heartbeat the marker would have lapsed long ago.
    for (let i = 0; i < 12; i += 1) await clock.advance(INTERVAL_MS);
    expect(await peer.take(ID)).toBe(false);
    stop.resolve('stopped');
    expect(await run.promise).toBe('stopped');
    expect(await ours.owner(ID)).toBeUndefined();
    expect(await peer.take(ID)).toBe(true);
  });

  it('releases only after a refresh that was in flight when the stop returned', async () => {
    const { clock, ours, peer, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const store = pausable(ours);
    store.pause('claim');
    const stop = new Deferred();
    const run = track(
      withHeldTeardownLease(
        { store: store.proxy, sandboxId: ID, intervalMs: INTERVAL_MS, clock, logger },
        () => stop.promise,
      ),
    );
    await clock.advance(INTERVAL_MS);
    const refresh = await store.nextCall('claim');
    stop.resolve();
    // The refresh lands after the stop returned; a release issued before it would be undone.
    await refresh.release();
    await run.promise;
    expect(await ours.owner(ID)).toBeUndefined();
    expect(await peer.take(ID)).toBe(true);
  });

  it('a failed stop still releases the marker, then its error propagates', async () => {
    const { clock, ours, peer, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const boom = new Error('kill failed');
    await expect(
      withHeldTeardownLease(
        { store: ours, sandboxId: ID, intervalMs: INTERVAL_MS, clock, logger },
        () => Promise.reject(boom),
      ),
    ).rejects.toBe(boom);
    expect(await peer.take(ID)).toBe(true);
  });

  it('a refresh that errors is retried on the next beat (unknown is not lost)', async () => {
    const { clock, ours, peer, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const store = pausable(ours);
    store.pause('claim', { times: 1 });
    const stop = new Deferred();
    const run = track(
      withHeldTeardownLease(
        { store: store.proxy, sandboxId: ID, intervalMs: INTERVAL_MS, clock, logger },
        () => stop.promise,
      ),
    );
    await clock.advance(INTERVAL_MS);
    (await store.nextCall('claim')).fail(new Error('store unreachable'));
    for (let i = 0; i < 5; i += 1) await clock.advance(INTERVAL_MS);
    expect(logger.text('warn')).toContain('Could not refresh the teardown lease');
    expect(await peer.take(ID)).toBe(false);
    stop.resolve();
    await run.promise;
  });

  it('stops refreshing and logs an error once a peer holds the lease; the peer keeps it', async () => {
    const { clock, table, ours, peer, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const stop = new Deferred();
    const run = track(
      withHeldTeardownLease(
        { store: ours, sandboxId: ID, intervalMs: INTERVAL_MS, clock, logger },
        () => stop.promise,
      ),
    );
    table.set(ID, 'own', 'peer', TTL_SECONDS * 1000);
    await clock.advance(INTERVAL_MS);
    expect(logger.text('error')).toContain('Lost the teardown exclusion');
    stop.resolve();
    await run.promise;
    expect(await peer.owner(ID)).toEqual({ state: 'own', ownerId: 'peer' });
  });

  it('a stop that ends between beats refreshes nothing more, and leaves no timer behind', async () => {
    const { clock, ours, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const store = pausable(ours);
    const stop = new Deferred();
    const run = track(
      withHeldTeardownLease(
        { store: store.proxy, sandboxId: ID, intervalMs: INTERVAL_MS, clock, logger },
        () => stop.promise,
      ),
    );
    await clock.advance(INTERVAL_MS);
    expect(store.calls().map((c) => c.method)).toEqual(['claim']);
    stop.resolve();
    await run.promise;
    // The beat the end of the stop woke up goes straight to the release.
    expect(store.calls().map((c) => c.method)).toEqual(['claim', 'release']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('after losing the exclusion the heartbeat never marks the sandbox again, even once the peer let it go', async () => {
    const { clock, table, ours, peer, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const stop = new Deferred();
    const run = track(
      withHeldTeardownLease(
        { store: ours, sandboxId: ID, intervalMs: INTERVAL_MS, clock, logger },
        () => stop.promise,
      ),
    );
    // The peer took the sandbox (our marker lapsed while a beat was late).
    table.set(ID, 'own', 'peer', TTL_SECONDS * 1000);
    await clock.advance(INTERVAL_MS);
    expect(logger.text('error')).toContain('Lost the teardown exclusion');
    await peer.release(ID);
    for (let i = 0; i < 3; i += 1) await clock.advance(INTERVAL_MS);
    expect(await peer.owner(ID)).toBeUndefined();
    expect(await peer.take(ID)).toBe(true);
    stop.resolve();
    await run.promise;
    expect(await peer.owner(ID)).toEqual({ state: 'own', ownerId: 'peer' });
  });

  it('a failed final release is logged; the stop’s outcome stands and onReleased still fires', async () => {
    const { clock, ours, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const store = pausable(ours);
    store.pause('release', { times: 1 });
    let released = false;
    const run = track(
      withHeldTeardownLease(
        {
          store: store.proxy,
          sandboxId: ID,
          intervalMs: INTERVAL_MS,
          clock,
          logger,
          onReleased: () => {
            released = true;
          },
        },
        async () => 'stopped',
      ),
    );
    (await store.nextCall('release')).fail(new Error('store unreachable'));
    expect(await run.promise).toBe('stopped');
    expect(logger.text('warn')).toContain('Could not release the teardown lease');
    expect(released).toBe(true);
  });

  it('onReleased fires only once the final release has completed', async () => {
    const { clock, ours, peer, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const store = pausable(ours);
    store.pause('release', { times: 1 });
    let released = false;
    const run = track(
      withHeldTeardownLease(
        {
          store: store.proxy,
          sandboxId: ID,
          intervalMs: INTERVAL_MS,
          clock,
          logger,
          onReleased: () => {
            released = true;
          },
        },
        async () => 'stopped',
      ),
    );
    const release = await store.nextCall('release');
    await settle();
    expect(released).toBe(false);
    expect(await peer.take(ID)).toBe(false); // the marker is still there
    await release.release();
    expect(await run.promise).toBe('stopped');
    expect(released).toBe(true);
  });
});
