import { createHash } from 'node:crypto';
import {
  NetworkPolicyUnenforceableError,
  OPEN_NETWORK_POLICY,
  canonicalNetworkPolicy,
  networkPolicyRestricts,
  parseNetworkPolicy,
  type EgressAttachment,
  type EgressGateway,
  type NetworkPolicy,
  type SandboxSpec,
  type SandboxSpecPolicy,
  type SandboxSpecSupport,
} from '@sbx/core';
import type { SandboxOwner } from './confinement/sandbox-owner.js';

/**
 * What the local provider enforces: nothing unconfined (commands on the host share its network);
 * confined, mode `none` always (the namespace has loopback only), and with an egress gateway
 * every filtered policy too (the namespace's only way out is the gateway's socket), credentials
 * when the gateway brokers them.
 */
export function localNetworkSupport(
  confined: boolean,
  egress: EgressGateway | undefined,
): SandboxSpecSupport['network'] {
  if (!confined) return undefined;
  return {
    none: true,
    filtered: egress !== undefined,
    credentials: egress?.brokersCredentials === true,
  };
}

/**
 * The effective policy of an acquire whose spec `admit` has checked: the spec's, narrowed by
 * `checkSandboxSpec` (its `network` is the effective one), else the configured one.
 */
export function effectiveNetworkPolicy(
  checked: SandboxSpec | undefined,
  specPolicy: SandboxSpecPolicy,
): NetworkPolicy {
  if (checked?.network !== undefined) return parseNetworkPolicy(checked.network, 'spec.network');
  return specPolicy.network ?? OPEN_NETWORK_POLICY;
}

/** The id part of a restricting policy (a digest of its canonical text); plain open has none. */
export function localNetworkKey(policy: NetworkPolicy): string | undefined {
  if (!networkPolicyRestricts(policy)) return undefined;
  return createHash('sha256').update(canonicalNetworkPolicy(policy)).digest('hex').slice(0, 16);
}

/**
 * How a confined sandbox of `policy` gets out: through `egress` unless the policy allows nothing
 * (mode `none` needs no proxy: loopback only is the policy). Without a gateway there is no way
 * out, which `localNetworkSupport` made sure only a policy of mode `none` or plain open meets.
 */
export function egressOpener(
  egress: EgressGateway | undefined,
  policy: NetworkPolicy,
  request: { sandboxId: string; userId: string; threadId: string; owner: SandboxOwner | undefined },
): (() => Promise<EgressAttachment>) | undefined {
  if (!egress || policy.mode === 'none') return undefined;
  return () =>
    egress.open({
      sandboxId: request.sandboxId,
      userId: request.userId,
      threadId: request.threadId,
      policy,
      ...(request.owner ? { socketOwner: request.owner } : {}),
    });
}

/** The thread-less sandbox runs on the host: no policy but plain open egress is enforceable. */
export function assertGenericNetwork(policy: NetworkPolicy): void {
  if (networkPolicyRestricts(policy)) {
    throw new NetworkPolicyUnenforceableError('LocalSandboxProvider (no thread)', policy.mode);
  }
}
