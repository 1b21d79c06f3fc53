import { ManualClock } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, sharedLeases } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

// A flush erases every holder's lease at once, a stale one included: gateway A (paused past the
// TTL) still parks a VM that gateway B has taken for a turn. Re-establishing a lapsed lease is a
// plain claim that the first caller wins, so a holder only parking the VM waits one renewal
// interval before it re-claims (core's `lapsedLeaseVerdict`), and a warm VM is killed only while
// its lease is still ours: a `del:` claim over an absent lease would be granted.

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

/** A parks the thread's VM; B takes it for a turn; then the store is flushed. */
async function staleWarmHolder(config: Record<string, unknown> = {}, visible = true) {
  const clock = new ManualClock(1_700_000_000_000);
  const fake = new FakeE2BClient();
  cleanups.push(() => fake.dispose());
  const { table, mine, peer } = sharedLeases(clock, { visible });
  const a = await harness({ clock, fake, ownership: mine, config });
  const b = await harness({ clock, fake, ownership: peer, config });
  const id = await a.provider.acquire(T('t1'));
  await a.provider.release(id);
  // A pauses past the TTL; the thread's next turn lands on B, which takes the VM over.
  expect(await b.provider.acquire(T('t1'))).toBe(id);
  expect(a.provider.warmIds()).toEqual([id]);
  table.clear();
  const intervalMs = a.provider.ownership.renewalIntervalSeconds * 1000;
  return { clock, fake, table, a, b, id, intervalMs };
}

describe('a lapsed lease after a flush', () => {
  it('the gateway using the VM keeps it: the stale warm holder re-claims only a renewal interval later', async () => {
    const { clock, a, b, id, intervalMs } = await staleWarmHolder();
    await a.provider.renewLeases(); // A comes back first: absent, and A only parks it
    await b.provider.renewLeases(); // B runs a turn in it: re-claims at once
    await clock.advance(intervalMs);
    await a.provider.renewLeases(); // A finds B's lease: forgets its stale entry
    await b.provider.renewLeases();
    expect(a.provider.warmIds()).toEqual([]);
    expect(b.provider.get(id)).toBeDefined();
    expect((await b.ownership.owner(id))?.ownerId).toBe(b.ownership.ownerId);
    expect(await b.provider.get(id)!.executeCommand('echo still-mine')).toContain('still-mine');
  });

  it('a parked VM nobody else re-claims is re-claimed by its holder one renewal interval later', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const { table, mine } = sharedLeases(clock, { visible: true });
    const a = await harness({ clock, ownership: mine });
    const id = await a.provider.acquire(T('t1'));
    await a.provider.release(id);
    table.clear();
    await a.provider.renewLeases();
    expect(await a.ownership.owner(id)).toBeUndefined();
    await clock.advance(a.provider.ownership.renewalIntervalSeconds * 1000);
    await a.provider.renewLeases();
    expect((await a.ownership.owner(id))?.ownerId).toBe(a.ownership.ownerId);
    expect(a.provider.warmIds()).toEqual([id]);
  });

  it('the stale warm holder’s eviction does not kill the VM under the other gateway’s turn', async () => {
    const { fake, a, b, id } = await staleWarmHolder({ replicas: 1, overflow_policy: 'reject' });
    // A needs its one slot for another thread: evicting its warm entry must not kill B's VM.
    await a.provider.acquire(T('t2')).catch(() => undefined);
    expect(fake.vms.get(id)!.alive).toBe(true);
    expect(b.provider.get(id)).toBeDefined();
    await b.provider.renewLeases();
    expect((await b.ownership.owner(id))?.ownerId).toBe(b.ownership.ownerId);
  });

  it('without cross-process visibility nobody else can hold the lease: a lapsed warm VM is evicted at once', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const { table, mine } = sharedLeases(clock);
    const a = await harness({
      clock,
      ownership: mine,
      config: { replicas: 1, overflow_policy: 'reject' },
    });
    const id = await a.provider.acquire(T('t1'));
    await a.provider.release(id);
    table.clear();
    const other = await a.provider.acquire(T('t2'));
    expect(a.fake.vms.get(id)!.alive).toBe(false);
    expect(a.provider.get(other)).toBeDefined();
  });
});
