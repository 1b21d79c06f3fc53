// `networking.k8s.io/v1` NetworkPolicies, served as the API server serves them: validated (422
// with the server's causes), defaulted (a port's protocol is TCP; policyTypes, when absent, are
// Ingress plus Egress when there are egress rules), an empty rule list returned absent (the
// server's omitempty), 409 for a name in use, 404 NotFound, deleted at once (no finalizers).

import type { KubeNetworkPolicy } from '../kube-objects.js';
import { bodyName } from './kube-call.js';
import type { KubeCall } from './kube-call.js';
import type { KubeObjectStore } from './kube-object-store.js';
import { invalidStatus, kubeStatus } from './kube-status.js';
import { matchesSelector } from './label-selector.js';
import { networkPolicyCauses } from './network-policy-validation.js';

const GROUP = 'networking.k8s.io';

function defaulted(body: KubeNetworkPolicy): KubeNetworkPolicy {
  const spec = { ...body.spec };
  const withTcp = <T extends { ports?: { protocol?: string }[] }>(rule: T): T => ({
    ...rule,
    ...(rule.ports
      ? { ports: rule.ports.map((p) => ({ ...p, protocol: p.protocol ?? 'TCP' })) }
      : {}),
  });
  if (spec.egress !== undefined && spec.egress.length > 0) spec.egress = spec.egress.map(withTcp);
  else delete spec.egress;
  if (spec.policyTypes === undefined || spec.policyTypes.length === 0)
    spec.policyTypes = body.spec.egress?.length ? ['Ingress', 'Egress'] : ['Ingress'];
  return { ...body, spec };
}

export function serveNetworkPolicies(store: KubeObjectStore, call: KubeCall): void {
  const { verb, namespace: ns, name, body, reply } = call;
  if (verb === 'list') {
    const items = [...store.networkPolicies.values()].filter(
      (o) =>
        o.metadata?.namespace === ns && matchesSelector(o.metadata?.labels, call.labelSelector),
    );
    return reply(200, {
      apiVersion: `${GROUP}/v1`,
      kind: 'NetworkPolicyList',
      metadata: { resourceVersion: store.version },
      items,
    });
  }
  if (verb === 'create') {
    const causes = networkPolicyCauses(body);
    const objName = bodyName(body);
    if (causes.length > 0)
      return reply(422, invalidStatus('NetworkPolicy', GROUP, objName, causes));
    const key = `${ns}/${objName}`;
    if (store.networkPolicies.has(key))
      return reply(
        409,
        kubeStatus(409, 'AlreadyExists', `networkpolicies.${GROUP} "${objName}" already exists`),
      );
    const metadata = store.stamp(body.metadata as object, { namespace: ns! });
    const created = defaulted({ ...(body as unknown as KubeNetworkPolicy), metadata });
    store.networkPolicies.set(key, created);
    return reply(201, created);
  }
  const key = `${ns}/${name}`;
  const found = store.networkPolicies.get(key);
  if (!found)
    return reply(404, kubeStatus(404, 'NotFound', `networkpolicies.${GROUP} "${name}" not found`));
  if (verb === 'delete') store.networkPolicies.delete(key);
  return reply(200, found);
}
