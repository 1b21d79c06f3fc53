// The core/v1 resources the stand-in serves (Namespaces, Pods, Services: create, read, list with
// label selectors, delete) as the API server does: validation refusing what a server refuses
// (422), 409 AlreadyExists for a name in use (a terminating one too), 404 NotFound.

import { randomUUID } from 'node:crypto';
import type { Pod, Service } from '../kube-objects.js';
import { bodyName } from './kube-call.js';
import type { KubeCall } from './kube-call.js';
import type { KubeObjectStore, StoredPod } from './kube-object-store.js';
import { invalidStatus, kubeStatus } from './kube-status.js';
import { podCauses, serviceCauses } from './kube-validation.js';
import { matchesSelector } from './label-selector.js';

export function serveNamespaces(store: KubeObjectStore, call: KubeCall): void {
  const { verb, namespace: ns, body, reply } = call;
  if (verb === 'create') {
    const name = bodyName(body);
    if (store.namespaces.has(name))
      return reply(409, kubeStatus(409, 'AlreadyExists', `namespaces "${name}" already exists`));
    const created = {
      ...body,
      metadata: {
        ...(body.metadata as object),
        uid: randomUUID(),
        resourceVersion: store.nextVersion(),
      },
    };
    store.namespaces.set(name, created);
    return reply(201, created);
  }
  const found = ns ? store.namespaces.get(ns) : undefined;
  if (!found) return reply(404, kubeStatus(404, 'NotFound', `namespaces "${ns}" not found`));
  if (verb === 'delete') store.deleteNamespace(ns!);
  return reply(200, found);
}

export async function servePodsAndServices(
  store: KubeObjectStore,
  resource: 'pods' | 'services',
  call: KubeCall,
): Promise<void> {
  const { verb, namespace: ns, name, body, reply } = call;
  const kind = resource === 'pods' ? 'Pod' : 'Service';
  const objects = resource === 'pods' ? store.pods : store.services;
  const unwrap = (v: StoredPod | Service): Pod | Service =>
    resource === 'pods' ? (v as StoredPod).pod : store.presentService(v as Service);

  if (verb === 'list') {
    const items = [...objects.values()]
      .map(unwrap)
      .filter(
        (o) =>
          o.metadata?.namespace === ns && matchesSelector(o.metadata?.labels, call.labelSelector),
      );
    return reply(200, {
      kind: `${kind}List`,
      apiVersion: 'v1',
      metadata: { resourceVersion: store.version },
      items,
    });
  }
  if (verb === 'create') {
    const causes = kind === 'Pod' ? podCauses(body) : serviceCauses(body);
    const objName = bodyName(body);
    if (causes.length > 0) return reply(422, invalidStatus(kind, '', objName, causes));
    const key = `${ns}/${objName}`;
    if (objects.has(key))
      return reply(
        409,
        kubeStatus(409, 'AlreadyExists', `${resource} "${objName}" already exists`),
      );
    const metadata = store.stamp(body.metadata as object, { namespace: ns! });
    if (resource === 'pods') {
      return reply(201, store.addPod(key, { ...(body as Pod), metadata }).pod);
    }
    const service = { ...(body as Service), metadata };
    await store.addService(key, service);
    return reply(201, store.presentService(service));
  }
  const key = `${ns}/${name}`;
  const found = objects.get(key);
  if (!found) return reply(404, kubeStatus(404, 'NotFound', `${resource} "${name}" not found`));
  if (verb === 'read') return reply(200, unwrap(found));
  if (resource === 'services') {
    store.deleteService(key, found as Service);
    return reply(200, store.presentService(found as Service));
  }
  const stored = found as StoredPod;
  store.terminatePod(key, stored);
  return reply(200, stored.pod);
}
