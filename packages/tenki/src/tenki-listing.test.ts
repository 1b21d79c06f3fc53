import { canListSandboxes, canReapOrphans } from '@sbx/core';
import { disposedAfterEach } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { harness as makeHarness } from './testing/harness.js';

// `sbx ls` / `sbx gc` on Tenki. The client port has no call that enumerates microVMs, so the
// provider offers neither capability: a listing of this process's own registry would show an
// inspecting process (`sbx ls` builds a fresh provider) no VM at all, which reads as "none exist"
// while VMs of the running gateways are billed.

const harness = disposedAfterEach(makeHarness);

describe('TenkiSandboxProvider inspection capabilities', () => {
  it('does not claim to list sandboxes, even while it tracks VMs of its own', async () => {
    const h = harness();
    const active = await h.provider.acquire({ userId: 'u1', threadId: 't1' });
    const warm = await h.provider.acquire({ userId: 'u1', threadId: 't2' });
    await h.provider.release(warm);
    expect(h.provider.activeIds).toEqual([active]);
    expect(h.provider.warmIds).toEqual([warm]);

    expect(canListSandboxes(h.provider)).toBe(false);
  });

  it('does not reap orphans (no ownership rules to reap by)', () => {
    expect(canReapOrphans(harness().provider)).toBe(false);
  });
});
