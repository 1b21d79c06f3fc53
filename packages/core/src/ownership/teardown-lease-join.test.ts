import { describe, expect, it } from 'vitest';
import { MemoryLeaseTable, MemoryOwnershipStore } from './memory-ownership-store.js';
import { withHeldTeardownLease } from './teardown-lease.js';
import { Deferred, settle, track } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import { pausable } from '../testing/pausable.js';
import { recordingLogger } from '../testing/recording-logger.js';

// The end of a teardown: the caller waits for the heartbeat's release, promptly and boundedly.
// These tests never await a teardown that might not end, so a broken wake-up or bound fails them
// instead of hanging them.

const ID = 'sbx-teardown-join-1';
const INTERVAL_MS = 10_000;
const JOIN_MS = 5_000;

function setup() {
  const clock = new ManualClock(1_000_000);
  const table = new MemoryLeaseTable({ clock });
  const ours = new MemoryOwnershipStore({ table, ttlSeconds: 30, ownerId: 'ours' });
  const peer = new MemoryOwnershipStore({ table, ttlSeconds: 30, ownerId: 'peer' });
  return { clock, ours, peer, logger: recordingLogger() };
}

describe('withHeldTeardownLease: joining the heartbeat', () => {
  it('the end of the stop releases the marker at once, without waiting for the next beat', async () => {
    const { clock, ours, peer, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const stop = new Deferred<string>();
    const run = track(
      withHeldTeardownLease(
        {
          store: ours,
          sandboxId: ID,
          intervalMs: INTERVAL_MS,
          clock,
          logger,
          joinTimeoutMs: JOIN_MS,
        },
        () => stop.promise,
      ),
    );
    stop.resolve('stopped');
    await settle();
    // No clock time passed: a heartbeat still waiting for its beat would hold the marker.
    const releasedAtOnce = run.settled && (await peer.owner(ID)) === undefined;
    await clock.advance(JOIN_MS); // ends the wait for a heartbeat that was never woken
    expect(await run.promise).toBe('stopped');
    expect(releasedAtOnce).toBe(true);
    expect(logger.text('warn')).not.toContain('still running');
  });

  it('a wedged refresh bounds the wait; the heartbeat releases once the store answers', async () => {
    const { clock, ours, peer, logger } = setup();
    await ours.claim(ID, { forDestroy: true });
    const store = pausable(ours);
    store.pause('claim');
    let released = false;
    const stop = new Deferred<string>();
    const run = track(
      withHeldTeardownLease(
        {
          store: store.proxy,
          sandboxId: ID,
          intervalMs: INTERVAL_MS,
          clock,
          logger,
          joinTimeoutMs: JOIN_MS,
          onReleased: () => {
            released = true;
          },
        },
        () => stop.promise,
      ),
    );
    await clock.advance(INTERVAL_MS);
    const wedged = await store.nextCall('claim');
    stop.resolve('done');
    await settle(); // the join bound is armed once the stop has returned
    await clock.advance(JOIN_MS);
    await settle();
    const returnedWithinBound = run.settled;
    const warned = logger.text('warn').includes('still running');
    const releasedEarly = released;
    await wedged.release();
    expect(await run.promise).toBe('done');
    expect(returnedWithinBound).toBe(true);
    expect(warned).toBe(true);
    expect(releasedEarly).toBe(false);
    await clock.advance(0);
    expect(released).toBe(true);
    expect(await peer.take(ID)).toBe(true);
  });
});
