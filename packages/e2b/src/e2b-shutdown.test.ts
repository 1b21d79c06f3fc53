import { ManualClock } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, sharedLeases } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';

// shutdown() kills what this instance owns, active, warm, tombstoned and in flight, each under a
// `del:` claim: a VM a peer has taken since is left to the peer.

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

describe('shutdown()', () => {
  it('leaves a warm VM a peer has taken since (its stale entry here) to the peer', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const { mine, peer } = sharedLeases(clock);
    const h = await harness({ clock, ownership: mine });
    const moved = await h.provider.acquire(T('moved'));
    await h.provider.release(moved);
    const mineToo = await h.provider.acquire(T('mine'));
    await h.provider.release(mineToo);
    await peer.take(moved); // the thread's next turn landed on the peer
    await h.provider.shutdown();
    expect(h.fake.vms.get(moved)!.alive).toBe(true);
    expect((await peer.owner(moved))?.ownerId).toBe(peer.ownerId);
    expect(h.fake.vms.get(mineToo)!.alive).toBe(false);
  });

  it('kills an active VM it owns and only closes one a peer has taken', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const { mine, peer } = sharedLeases(clock);
    const h = await harness({ clock, ownership: mine });
    const ours = await h.provider.acquire(T('ours'));
    const taken = await h.provider.acquire(T('taken'));
    await peer.take(taken);
    await h.provider.shutdown();
    expect(h.fake.vms.get(ours)!.alive).toBe(false);
    expect(h.fake.vms.get(taken)!.alive).toBe(true);
    expect(h.fake.callsOf('close', taken).length).toBeGreaterThan(0);
  });
});
