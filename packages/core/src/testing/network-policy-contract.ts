import { expect, it } from 'vitest';
import { parseNetworkPolicy, type NetworkPolicyInput } from '../contract/network-policy.js';
import { networkPolicyEnforced } from '../contract/sandbox-spec.js';
import { describeProviderSuite, errorCode as codeOf, threadIds } from './provider-suite.js';
import type { ProviderUnderTest } from './provider-suite.js';

const thread = threadIds('netpolicy');

async function outcome(promise: Promise<unknown>): Promise<{ ok: string } | { error: unknown }> {
  try {
    return { ok: String(await promise) };
  } catch (error) {
    return { error };
  }
}

/** Policies that restrict egress: each must be enforced or refused, never ignored. */
const RESTRICTING: readonly (readonly [string, NetworkPolicyInput])[] = [
  ['mode none', { mode: 'none' }],
  ['mode allowlist', { mode: 'allowlist', allow: ['example.com:443'] }],
  ['mode open with a deny rule', { mode: 'open', deny: ['*.example.com'] }],
];

/**
 * The network policy of an acquire (`spec.network`), as each provider declares it in
 * `specSupport.network` (see `networkPolicyEnforced`): a provider that cannot enforce a policy
 * refuses it with `NETWORK_POLICY_UNENFORCEABLE` before it makes a sandbox; one that can gives the
 * policy a sandbox of its own (the policy is part of the identity). Plain open egress is accepted by all.
 * Whether an enforcing provider really blocks traffic is its own integration test's business: it
 * needs the provider's network plumbing, which this suite cannot see.
 */
export function describeNetworkPolicyContract(
  name: string,
  make: () => Promise<ProviderUnderTest>,
): void {
  describeProviderSuite(`SandboxProvider network policy contract: ${name}`, make, (provider) => {
    it('declares whether it enforces network policies (absent: it does not)', () => {
      const support = provider().specSupport.network;
      if (typeof support === 'object') {
        expect(Object.keys(support).sort()).toEqual(['credentials', 'filtered', 'none']);
      } else {
        expect([undefined, true, false]).toContain(support);
      }
    });

    for (const [label, network] of RESTRICTING) {
      it(`${label}: enforced with a sandbox of its own, or refused with a typed error`, async () => {
        const threadId = thread('restrict');
        const result = await outcome(
          provider().acquire({ userId: 'u1', threadId, spec: { network } }),
        );
        const enforced = networkPolicyEnforced(
          provider().specSupport.network,
          parseNetworkPolicy(network),
        );
        if (!enforced) {
          expect('error' in result && codeOf(result.error)).toBe('NETWORK_POLICY_UNENFORCEABLE');
          return;
        }
        if ('error' in result) throw result.error;
        const open = await provider().acquire({ userId: 'u1', threadId });
        expect(open).not.toBe('ok' in result ? result.ok : undefined);
      });
    }

    it('a malformed policy is refused with the key path, whatever the provider supports', async () => {
      const result = await outcome(
        provider().acquire({
          userId: 'u1',
          threadId: thread('malformed'),
          spec: { network: { mode: 'allowlist', allow: ['exa mple.com'] } },
        }),
      );
      expect('error' in result && codeOf(result.error)).toBe('INVALID_ARGUMENT');
      expect('error' in result && String(result.error)).toContain('spec.network.allow[0]');
    });

    it('plain open egress is accepted by every provider', async () => {
      const result = await outcome(
        provider().acquire({
          userId: 'u1',
          threadId: thread('open'),
          spec: { network: { mode: 'open' } },
        }),
      );
      expect(result).toHaveProperty('ok');
    });
  });
}
