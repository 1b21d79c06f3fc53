// The kubernetes-sigs/agent-sandbox `Sandbox` custom resource, served as the API server serves a
// CRD's objects: validated by the CRD's schema per version, the status a subresource the
// controller writes, a delete that lets the garbage collector take what the Sandbox owns.

import type { AgentSandbox } from '../kube-objects.js';
import { agentSandboxCauses } from './agent-sandbox-validation.js';
import { presentSandbox, reconcileSandbox } from './agent-sandbox-controller.js';
import { bodyName } from './kube-call.js';
import type { KubeCall } from './kube-call.js';
import type { KubeObjectStore, StoredSandbox } from './kube-object-store.js';
import { invalidStatus, kubeStatus } from './kube-status.js';
import { matchesSelector } from './label-selector.js';

const GROUP = 'agents.x-k8s.io';

export function serveSandboxes(store: KubeObjectStore, version: string, call: KubeCall): void {
  const { verb, namespace: ns, name, body, reply } = call;
  if (verb === 'list') {
    const items = [...store.sandboxes.values()]
      .filter((s) => s.object.metadata?.namespace === ns)
      .map((s) => presentSandbox(store, s, version))
      .filter((o) => matchesSelector(o.metadata?.labels, call.labelSelector));
    return reply(200, {
      apiVersion: `${GROUP}/${version}`,
      kind: 'SandboxList',
      metadata: { resourceVersion: store.version },
      items,
    });
  }
  if (verb === 'create') {
    const causes = agentSandboxCauses(version, body);
    const objName = bodyName(body);
    if (causes.length > 0) return reply(422, invalidStatus('Sandbox', GROUP, objName, causes));
    const key = `${ns}/${objName}`;
    if (store.sandboxes.has(key)) {
      return reply(
        409,
        kubeStatus(409, 'AlreadyExists', `sandboxes.${GROUP} "${objName}" already exists`, {
          name: objName,
          group: GROUP,
          kind: 'sandboxes',
        }),
      );
    }
    const object: AgentSandbox = {
      ...(body as unknown as AgentSandbox),
      metadata: store.stamp(body.metadata as object, { namespace: ns! }),
    };
    // The status is a subresource: a create's status is dropped, as the server drops it.
    delete object.status;
    const stored: StoredSandbox = { object, expiry: undefined, expired: false };
    store.sandboxes.set(key, stored);
    reconcileSandbox(store, key, stored);
    return reply(201, presentSandbox(store, stored, version));
  }
  const key = `${ns}/${name}`;
  const found = store.sandboxes.get(key);
  if (!found)
    return reply(404, kubeStatus(404, 'NotFound', `sandboxes.${GROUP} "${name}" not found`));
  if (verb === 'read') return reply(200, presentSandbox(store, found, version));
  // delete: the object goes; what it owns is collected (background propagation). While
  // terminations are held it stays terminating, as with a finalizer.
  if (!store.holdingTerminations) store.deleteSandbox(key, found);
  else if (!found.object.metadata!.deletionTimestamp) {
    found.object.metadata!.deletionTimestamp = new Date().toISOString();
    found.object.metadata!.resourceVersion = store.nextVersion();
    store.hold(`sandboxes/${key}`, () => store.deleteSandbox(key, found));
  }
  return reply(200, presentSandbox(store, found, version));
}
