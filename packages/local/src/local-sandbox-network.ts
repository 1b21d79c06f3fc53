import { createHash } from 'node:crypto';
import { DEFAULT_SPEC_POLICY, NO_SPEC_SUPPORT, checkSandboxSpec } from '@sbx/core/internal';
import {
  NetworkPolicyUnenforceableError,
  OPEN_NETWORK_POLICY,
  canonicalNetworkPolicy,
  networkPolicyRestricts,
  parseNetworkPolicy,
  type EgressAttachment,
  type EgressGateway,
  type NetworkPolicy,
  type AcquireOptions,
  type SandboxSpec,
  type SandboxSpecPolicy,
  type SandboxSpecSupport,
} from '@sbx/core';
import type { SandboxOwner } from './confinement/sandbox-owner.js';

/**
 * The network side of the local provider: what it enforces, the configured policy, the effective
 * policy of each acquire and how a sandbox of it gets out. Kept apart from the provider's cache.
 */
export class LocalSandboxNetwork {
  /** `sandbox.spec` with `sandbox.network` checked once (a caller's has not been through the schema). */
  readonly specPolicy: SandboxSpecPolicy;

  constructor(
    configured: SandboxSpecPolicy | undefined,
    private readonly egress: EgressGateway | undefined,
    private readonly confined: () => boolean,
  ) {
    const specPolicy = configured ?? DEFAULT_SPEC_POLICY;
    this.specPolicy = specPolicy.network
      ? { ...specPolicy, network: parseNetworkPolicy(specPolicy.network, 'sandbox.network') }
      : specPolicy;
  }

  /** Network policies only (see `localNetworkSupport`); every other spec field is refused. */
  get specSupport(): SandboxSpecSupport {
    return { ...NO_SPEC_SUPPORT, network: localNetworkSupport(this.confined(), this.egress) };
  }

  /**
   * The effective policy of an acquire `admit` has let through. The thread-less sandbox runs on
   * the host, so only plain open egress is enforceable there.
   */
  policyOf(options: AcquireOptions, provider: string): NetworkPolicy {
    const checked = checkSandboxSpec(options.spec, this.specSupport, this.specPolicy, provider);
    const policy = effectiveNetworkPolicy(checked, this.specPolicy);
    if (options.threadId === undefined && networkPolicyRestricts(policy)) {
      throw new NetworkPolicyUnenforceableError(`${provider} (no thread)`, policy.mode);
    }
    return policy;
  }

  /** How a confined sandbox of `policy` gets out (see `egressOpener`). */
  opener(
    policy: NetworkPolicy,
    request: {
      sandboxId: string;
      userId: string;
      threadId: string;
      owner: SandboxOwner | undefined;
    },
  ): (() => Promise<EgressAttachment>) | undefined {
    return egressOpener(this.egress, policy, request);
  }
}

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
