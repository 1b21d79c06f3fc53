import { describe, expect, it } from 'vitest';
import { describeNetworkPolicyContract } from '@sbx/core/testing';
import { isSbxError, type NetworkPolicySupport } from '@sbx/core';
import { MemorySandboxBackend } from './testing/memory-sandbox-backend.js';
import { makeHarness } from './testing/provider-harness.js';

// A local container backend enforces no network policy yet, nor a remote one whose provisioner
// does not say it does: every restricting policy is refused at acquire, never ignored.
for (const kind of ['local', 'remote'] as const) {
  describeNetworkPolicyContract(`AioSandboxProvider (${kind} backend, refuses)`, async () => {
    const h = await makeHarness({ backend: new MemorySandboxBackend({ kind }) });
    return { provider: h.provider, cleanup: () => h.cleanup() };
  });
}

// A provisioner that enforces mode none (its `network_none` capability): none is admitted, the
// rest still refused.
const NONE_ONLY: NetworkPolicySupport = { none: true, filtered: false, credentials: false };
describeNetworkPolicyContract('AioSandboxProvider (remote backend, enforces none)', async () => {
  const backend = new MemorySandboxBackend({ kind: 'remote', networkSupport: NONE_ONLY });
  const h = await makeHarness({ backend });
  return { provider: h.provider, cleanup: () => h.cleanup() };
});

function codeOf(err: unknown): string | undefined {
  return isSbxError(err) ? err.code : undefined;
}

describe('AioSandboxProvider network policy on a remote backend', () => {
  it('hands the backend the effective policy of a mode none acquire', async () => {
    const backend = new MemorySandboxBackend({ kind: 'remote', networkSupport: NONE_ONLY });
    const h = await makeHarness({ backend });
    try {
      const id = await h.provider.acquire({
        userId: 'u1',
        threadId: 't-none',
        spec: { network: { mode: 'none' } },
      });
      expect(backend.containers.get(id)?.request?.network?.mode).toBe('none');
      const open = await h.provider.acquire({ userId: 'u1', threadId: 't-open' });
      expect(open).not.toBe(id);
      expect(backend.containers.get(open)?.request?.network?.mode).toBe('open');
    } finally {
      await h.cleanup();
    }
  });

  it('binds a configured mode none to every acquire, anonymous ones too', async () => {
    const backend = new MemorySandboxBackend({ kind: 'remote', networkSupport: NONE_ONLY });
    const h = await makeHarness({ backend, config: { network: { mode: 'none' } } });
    try {
      const thread = await h.provider.acquire({ userId: 'u1', threadId: 't1' });
      const anonymous = await h.provider.acquire({});
      for (const id of [thread, anonymous]) {
        expect(backend.containers.get(id)?.request?.network?.mode).toBe('none');
      }
    } finally {
      await h.cleanup();
    }
  });

  it('refuses mode none when the provisioner says it does not enforce it', async () => {
    const backend = new MemorySandboxBackend({
      kind: 'remote',
      networkSupport: { none: false, filtered: false, credentials: false },
    });
    const h = await makeHarness({ backend });
    try {
      const err = await h.provider
        .acquire({ userId: 'u1', threadId: 't1', spec: { network: { mode: 'none' } } })
        .catch((e: unknown) => e);
      expect(codeOf(err)).toBe('NETWORK_POLICY_UNENFORCEABLE');
      expect(backend.containers.size).toBe(0);
    } finally {
      await h.cleanup();
    }
  });

  it('a failed capability ask fails the acquire and is asked again by the next one', async () => {
    const backend = new MemorySandboxBackend({ kind: 'remote' });
    let asks = 0;
    backend.networkSupport = async () => {
      asks += 1;
      if (asks === 1) throw new Error('provisioner unreachable');
      return NONE_ONLY;
    };
    const h = await makeHarness({ backend });
    try {
      const spec = { network: { mode: 'none' as const } };
      await expect(h.provider.acquire({ userId: 'u1', threadId: 't1', spec })).rejects.toThrow(
        /unreachable/,
      );
      expect(backend.containers.size).toBe(0);
      const id = await h.provider.acquire({ userId: 'u1', threadId: 't1', spec });
      expect(backend.containers.get(id)?.request?.network?.mode).toBe('none');
      expect(asks).toBe(2);
    } finally {
      await h.cleanup();
    }
  });
});
