import { settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness } from './testing/provider-harness.js';
import type { Harness, HarnessOptions } from './testing/provider-harness.js';

// Bugs found where the provider's paths meet (issue #16), each pinned by the interleaving that
// produced it: the test fails on the code before the fix.

const T = (threadId: string) => ({ userId: 'u1', threadId });
const harnesses: Harness[] = [];
async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const h = await makeHarness(options);
  harnesses.push(h);
  return h;
}
afterEach(async () => {
  for (const h of harnesses.splice(0).reverse()) await h.cleanup();
});

describe('the readiness window of a create (#16 bug 4)', () => {
  it('reconciliation does not adopt a container still inside its create’s readiness wait', async () => {
    const h = await harness({ config: { replicas: 1 } });
    h.backendGate.pause('readinessProbe', { times: 1 });
    const first = track(h.provider.acquire(T('a')));
    const probe = await h.backendGate.nextCall('readinessProbe');
    // Reconciliation runs meanwhile (the memory store applies no grace: adoption is instant).
    const summary = await h.provider.reconcile().catch(async (err: unknown) => {
      await probe.release();
      throw err;
    });
    expect(summary.adopted).toEqual([]);
    // A create for another thread at the replica cap must not find it as a warm entry to evict.
    const second = track(h.provider.acquire(T('b')));
    await settle();
    await probe.release();
    const id = await first.promise;
    expect(h.backend.isRunning(id)).toBe(true);
    expect(h.provider.get(id)).toBeDefined();
    await second.promise.catch(() => undefined);
    expect(h.backend.isRunning(id)).toBe(true);
  });

  it('the orphan reaper keeps a container still inside its create’s readiness wait', async () => {
    const h = await harness();
    h.backendGate.pause('readinessProbe', { times: 1 });
    const first = track(h.provider.acquire(T('a')));
    const probe = await h.backendGate.nextCall('readinessProbe');
    const report = await h.provider.reapOrphans({ graceMs: 0 }).finally(() => probe.release());
    expect(report.reaped).toEqual([]);
    expect(report.kept.map((k) => k.reason)).toEqual(['being created by this instance']);
    expect(h.backend.isRunning(await first.promise)).toBe(true);
  });
});
