import { OwnershipBackendError } from '@sbx/core';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness } from './testing/provider-harness.js';
import type { Harness, HarnessOptions } from './testing/provider-harness.js';

// The acquire paths' store failures: a take that cannot be answered is not a teardown marker. The
// acquire fails and this instance keeps what it tracks; only a `del:` (another instance stopping
// it) makes the path forget the sandbox and start afresh.

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

describe('a store error on the acquire paths', () => {
  it('reuse: the take failing raises, and the active sandbox stays tracked and mapped', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const discovered = h.backend.count('discover');
    h.faults.fail('take');
    await expect(h.provider.acquire(T('t'))).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(h.provider.get(id)).toBeDefined();
    expect(Object.values(h.provider.snapshot().threads)).toEqual([id]);
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
    expect(h.provider.snapshot().warm).toEqual([id]);
    expect(h.backend.count('discover')).toBe(discovered);
    h.faults.heal();
    expect(await h.provider.acquire(T('t'))).toBe(id);
    expect(h.provider.snapshot()).toMatchObject({ active: [id], warm: [] });
  });
});
