import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseNetworkPolicy, silentLogger, type EgressGateway } from '@sbx/core';
import { describeNetworkPolicyContract, rejectionOf } from '@sbx/core/testing';
import { EgressProxy, EgressProxyGateway } from '@sbx/egress';
import { describe, expect, it } from 'vitest';
import { LocalSandboxProvider, type LocalProviderOptions } from './index.js';
import { confinementForTests } from './confinement/confinement-test-support.js';

const confinable = confinementForTests();

async function makeProvider(options: LocalProviderOptions) {
  const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-netpolicy-'));
  const provider = new LocalSandboxProvider({ baseDir, logger: silentLogger, ...options });
  return { provider, cleanup: () => rm(baseDir, { recursive: true, force: true }) };
}

function gateway(): { egress: EgressGateway; proxy: EgressProxy } {
  const proxy = new EgressProxy();
  return { egress: new EgressProxyGateway(proxy), proxy };
}

describeNetworkPolicyContract('LocalSandboxProvider, isolation none (cannot enforce)', () =>
  makeProvider({ isolation: 'none', allowHostBash: true, egress: gateway().egress }),
);

it('attack: unconfined (host commands share the host network) refuses every restricting policy, even with a gateway', async () => {
  const { egress, proxy } = gateway();
  const { provider, cleanup } = await makeProvider({
    isolation: 'none',
    allowHostBash: true,
    egress,
  });
  expect(provider.specSupport.network).toBeUndefined();
  for (const network of [
    { mode: 'none' as const },
    { mode: 'allowlist' as const, allow: ['example.com'] },
  ]) {
    const error = await rejectionOf(
      provider.acquire({ userId: 'u', threadId: 't', spec: { network } }),
    );
    expect((error as { code?: string }).code).toBe('NETWORK_POLICY_UNENFORCEABLE');
  }
  await proxy.close();
  await cleanup();
});

describe.runIf(confinable)('confined', () => {
  describeNetworkPolicyContract(
    'LocalSandboxProvider, confined without an egress gateway (mode none only)',
    () => makeProvider({ isolation: 'bwrap' }),
  );
  describeNetworkPolicyContract(
    'LocalSandboxProvider, confined with an egress gateway (enforces)',
    async () => {
      const { egress, proxy } = gateway();
      const made = await makeProvider({ isolation: 'bwrap', egress });
      return {
        provider: made.provider,
        cleanup: async () => {
          await proxy.close();
          await made.cleanup();
        },
      };
    },
  );

  it('declares what it enforces: mode none alone without a gateway, every filtered policy with one', async () => {
    const without = await makeProvider({ isolation: 'bwrap' });
    const { egress, proxy } = gateway();
    const withGateway = await makeProvider({ isolation: 'bwrap', egress });
    expect(without.provider.specSupport.network).toEqual({
      none: true,
      filtered: false,
      credentials: false,
    });
    expect(withGateway.provider.specSupport.network).toEqual({
      none: true,
      filtered: true,
      credentials: false,
    });
    await proxy.close();
    await without.cleanup();
    await withGateway.cleanup();
  });
});

describe('the configured policy (sandbox.network)', () => {
  it('attack: a configured allow list binds an acquire without a spec (refused where it cannot be enforced)', async () => {
    const { provider, cleanup } = await makeProvider({
      isolation: 'none',
      allowHostBash: true,
      config: {
        specPolicy: {
          images: [],
          network: parseNetworkPolicy({ mode: 'allowlist', allow: ['example.com'] }),
        },
      },
    });
    const error = await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }));
    expect((error as { code?: string }).code).toBe('NETWORK_POLICY_UNENFORCEABLE');
    await cleanup();
  });

  it('attack: a malformed configured policy is refused at construction with its key path', async () => {
    const error = await makeProvider({
      isolation: 'none',
      config: {
        specPolicy: {
          images: [],
          network: { mode: 'allowlist', allow: [{ host: '10.0.0.1' }], deny: [], credentials: [] },
        },
      },
    }).catch((e: unknown) => e);
    expect(String(error)).toContain('sandbox.network.allow[0]');
  });

  it.runIf(confinable)(
    'attack: the thread-less sandbox (on the host) refuses mode none even where threads enforce it',
    async () => {
      const { provider, cleanup } = await makeProvider({ isolation: 'bwrap' });
      const error = await rejectionOf(provider.acquire({ spec: { network: { mode: 'none' } } }));
      expect((error as { code?: string }).code).toBe('NETWORK_POLICY_UNENFORCEABLE');
      await cleanup();
    },
  );
});
