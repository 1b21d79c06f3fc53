import { MemoryCapacityStore, SandboxCapacityExceededError } from '@sbx/core';
import { ManualClock, settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, sharedLeases } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';

// Making room is an await (a warm VM's kill, a tombstone's retried kill): the slot it frees may be
// taken by someone else before the evicting acquire resumes, and shutdown may begin meanwhile, so
// both are checked again after it. A tombstone a peer has taken since is not ours to kill: it is
// cleared, not kept forever.

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

/** A first acquire whose bootstrap and kill both fail: its VM stays as a tombstone. */
async function tombstone(h: Harness): Promise<string> {
  h.fake.fail('run', new Error('bootstrap boom'), { times: 1 });
  h.fake.fail('kill', new Error('kill failed'), { times: 1 });
  await expect(h.provider.acquire(T('t0'))).rejects.toThrow(/bootstrap/);
  const [id] = h.provider.tombstoneIds();
  expect(id).toBeDefined();
  return id!;
}

describe('eviction', () => {
  it('checks capacity again after the await: a waiter woken by the freed slot keeps it, the evicting acquire waits', async () => {
    const h = await harness({ config: { replicas: 1, overflow_policy: 'wait' } });
    await tombstone(h);
    // B retries the tombstone's kill (held); C finds the tombstone being retried and waits.
    h.fake.gate.pause('kill', { times: 1 });
    const b = track(h.provider.acquire(T('b')));
    const kill = await h.fake.gate.nextCall('kill');
    const c = track(h.provider.acquire(T('c')));
    await settle();
    await kill.release();
    // The confirmed kill frees the slot and wakes C; one of the two gets it, the other waits.
    const first = await Promise.race([b.promise, c.promise]);
    await settle();
    expect(h.fake.callsOf('create')).toHaveLength(2); // the tombstone's and one more
    expect(h.provider.capacitySnapshot()).toMatchObject({ total: 1, active: 1, reserved: 0 });
    expect([b.settled, c.settled].filter(Boolean)).toHaveLength(1);
    expect(h.provider.get(first)).toBeDefined();
    await h.provider.shutdown();
    await Promise.allSettled([b.promise, c.promise]);
  });

  it('an eviction that ends after shutdown began reserves nothing and creates nothing', async () => {
    const h = await harness({ config: { replicas: 1, overflow_policy: 'reject' } });
    const a = await h.provider.acquire(T('a'));
    await h.provider.release(a);
    h.fake.gate.pause('kill', { times: 1 });
    const b = track(h.provider.acquire(T('b')));
    const kill = await h.fake.gate.nextCall('kill');
    const shutdown = h.provider.shutdown();
    await kill.release();
    const err = await b.promise.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxCapacityExceededError);
    expect((err as SandboxCapacityExceededError).reason).toBe('shutdown');
    await shutdown;
    expect(h.fake.callsOf('create')).toHaveLength(1);
  });
});

describe('the deployment-wide ledger', () => {
  it('a full ledger with local room evicts a warm VM here and reserves again', async () => {
    const ledger = new MemoryCapacityStore({ hardLimit: 1 });
    await ledger.reconcile({
      expectedRevision: await ledger.revision(),
      entries: [],
      complete: true,
      maxAgeMs: 120_000,
    });
    const h = await harness({
      capacity: ledger,
      config: { replicas: 2, overflow_policy: 'reject' },
    });
    const a = await h.provider.acquire(T('a'));
    await h.provider.release(a);
    const b = await h.provider.acquire(T('b'));
    expect(h.fake.vms.get(a)!.alive).toBe(false);
    expect(h.provider.get(b)).toBeDefined();
    expect(h.provider.warmIds()).toEqual([]);
  });
});

describe('tombstones', () => {
  it('a tombstone a peer has taken since is cleared without a kill, and its slot serves the next acquire', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const { mine, peer } = sharedLeases(clock);
    const h = await harness({
      clock,
      ownership: mine,
      config: { replicas: 1, overflow_policy: 'reject' },
    });
    const id = await tombstone(h);
    expect(await peer.take(id)).toBe(true);
    const b = await h.provider.acquire(T('b'));
    expect(h.provider.get(b)).toBeDefined();
    expect(h.provider.tombstoneIds()).toEqual([]);
    expect(h.fake.vms.get(id)!.alive).toBe(true);
    expect((await peer.owner(id))?.ownerId).toBe(peer.ownerId);
  });
});
