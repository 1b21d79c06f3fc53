// The per-sandbox NetworkPolicy: what a sandbox Pod may reach, for the egress it was created with.
// NetworkPolicies add up (a Pod may reach the union of what every policy selecting it allows), so
// this one is meant to sit beside the namespace's Ingress-only policy (deploy/kubernetes), never
// beside one that allows egress: that would widen `none` to it.

import type { SandboxEgressMode } from './create-request.js';
import type { KubeNetworkPolicy } from './kube-objects.js';
import type { ProvisionerSettings } from './provisioner-settings.js';
import type { EgressRoute } from './sandbox-egress-route.js';
import { SANDBOX_ID_LABEL, sandboxLabels } from './sandbox-objects.js';

export const networkPolicyName = (sandboxId: string): string => `sandbox-${sandboxId}-egress`;

/**
 * The sandbox's policy: for `none`, egress to nothing (not even DNS); for `open` through the
 * proxy, egress to the proxy's Pods on their port only: no DNS (the sandbox is given the proxy's
 * cluster IP, and the proxy resolves every name it forwards to), no other Pod, no node, nothing
 * outside. Undefined for `open` without a proxy: the sandbox's egress is not restricted.
 */
export function sandboxNetworkPolicy(
  settings: ProvisionerSettings,
  sandboxId: string,
  mode: SandboxEgressMode,
  route: EgressRoute | undefined,
): KubeNetworkPolicy | undefined {
  if (mode === 'open' && route === undefined) return undefined;
  const egress =
    mode === 'none' || route === undefined
      ? []
      : [
          {
            to: [{ podSelector: { matchLabels: { ...route.podLabels } } }],
            ports: [{ protocol: 'TCP' as const, port: route.podPort }],
          },
        ];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: networkPolicyName(sandboxId),
      namespace: settings.namespace,
      labels: sandboxLabels(sandboxId, settings.compat),
    },
    spec: {
      podSelector: { matchLabels: { [SANDBOX_ID_LABEL]: sandboxId } },
      policyTypes: ['Egress'],
      egress,
    },
  };
}
