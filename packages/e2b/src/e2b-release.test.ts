import { track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness } from './test-support.js';
import type { Harness, HarnessOptions } from './test-support.js';

// Release parks a thread's VM warm after mirroring its outputs, or kills a thread-less one. A VM
// known dead costs nothing but its kill; a release repeated while the first is in flight changes
// nothing.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const h = await makeHarness(options);
  cleanups.push(h.cleanup);
  return h;
}

describe('release', () => {
  it('kills a VM whose adapter is known dead without syncing its outputs first', async () => {
    const h = await harness();
    const id = await h.provider.acquire({ userId: 'u1', threadId: 't1' });
    h.provider.get(id)!.markDead();
    const before = h.fake.calls.length;
    await h.provider.release(id);
    const after = h.fake.calls.slice(before).filter((c) => c.sandboxId === id);
    expect(after.map((c) => c.op).filter((op) => op !== 'kill' && op !== 'close')).toEqual([]);
    expect(h.fake.vms.get(id)!.alive).toBe(false);
    expect(h.provider.warmIds()).toEqual([]);
  });

  it('two releases of one thread’s VM at once park it once (the second, queued on the lock, finds it released)', async () => {
    const h = await harness();
    const id = await h.provider.acquire({ userId: 'u1', threadId: 't1' });
    const first = track(h.provider.release(id));
    const second = track(h.provider.release(id));
    await Promise.all([first.promise, second.promise]);
    expect(h.provider.warmIds()).toEqual([id]);
    expect(h.provider.capacitySnapshot()).toMatchObject({ warm: 1, active: 0, total: 1 });
  });

  it('two releases of one thread-less VM at once kill it once', async () => {
    const h = await harness();
    const id = await h.provider.acquire();
    h.fake.gate.pause('kill', { times: 1 });
    const first = track(h.provider.release(id));
    const kill = await h.fake.gate.nextCall('kill');
    const second = track(h.provider.release(id));
    await kill.release();
    await Promise.all([first.promise, second.promise]);
    expect(h.fake.callsOf('kill', id)).toHaveLength(1);
    expect(h.provider.capacitySnapshot().total).toBe(0);
  });
});
