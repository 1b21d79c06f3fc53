// kubernetes-sigs/agent-sandbox's controller, in small, over the stand-in's objects: what it makes
// for a `Sandbox` (a Pod from its template and a headless Service, both owned by it), the expiry at
// `shutdownTime`, and the status it writes (the `Ready` condition with the controller's reasons,
// `serviceFQDN`), computed when a Sandbox is read.

import { randomUUID } from 'node:crypto';
import type { AgentSandbox, Condition, Pod } from '../kube-objects.js';
import { sandboxNameHash } from './agent-sandbox-validation.js';
import type { KubeObjectStore, StoredSandbox } from './kube-object-store.js';

const NAME_HASH_LABEL = 'agents.x-k8s.io/sandbox-name-hash';

/**
 * A Pod named after the Sandbox from its template (the template's labels plus the name-hash
 * tracking label), a headless Service of that name selecting it when `spec.service`, both owned
 * by the Sandbox; at `shutdownTime` both go, and the Sandbox too (`shutdownPolicy: Delete`) or it
 * stays expired.
 */
export function reconcileSandbox(store: KubeObjectStore, key: string, stored: StoredSandbox): void {
  const sandbox = stored.object;
  const meta = sandbox.metadata!;
  const ns = meta.namespace!;
  const hash = sandboxNameHash(meta.name!);
  const owner = {
    apiVersion: sandbox.apiVersion!,
    kind: 'Sandbox',
    name: meta.name!,
    uid: meta.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
  const shutdown = sandbox.spec.shutdownTime ? Date.parse(sandbox.spec.shutdownTime) : undefined;
  if (shutdown !== undefined && shutdown <= Date.now()) {
    stored.expired = true;
    store.collectOwnedBy(meta.uid!);
    if (sandbox.spec.shutdownPolicy === 'Delete') store.deleteSandbox(key, stored);
    return;
  }
  const owned = (labels: Record<string, string>) => ({
    name: meta.name!,
    namespace: ns,
    labels,
    ownerReferences: [owner],
    uid: randomUUID(),
    resourceVersion: store.nextVersion(),
    creationTimestamp: new Date().toISOString(),
  });
  const podKey = `${ns}/${meta.name}`;
  if (!store.pods.has(podKey)) {
    const template = sandbox.spec.podTemplate;
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: owned({ ...(template.metadata?.labels ?? {}), [NAME_HASH_LABEL]: hash }),
      spec: structuredClone(template.spec),
    };
    store.addPod(podKey, pod);
  }
  if (sandbox.spec.service === true && !store.services.has(podKey)) {
    const ports = sandbox.spec.podTemplate.spec.containers.flatMap((c) =>
      (c.ports ?? []).map((p) => ({
        name: p.name,
        port: p.containerPort,
        targetPort: p.containerPort,
        protocol: p.protocol ?? 'TCP',
      })),
    );
    store.services.set(podKey, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: owned({ [NAME_HASH_LABEL]: hash }),
      spec: { clusterIP: 'None', selector: { [NAME_HASH_LABEL]: hash }, ports },
    });
  }
  if (shutdown !== undefined) {
    // Timers cap at about 24.8 days; a later shutdown is re-armed when this one fires.
    const delay = Math.min(shutdown - Date.now(), 2_000_000_000);
    stored.expiry = setTimeout(() => reconcileSandbox(store, key, stored), delay);
    stored.expiry.unref();
  }
}

/** A Sandbox as read: its status computed from what it owns, as the controller writes it. */
export function presentSandbox(
  store: KubeObjectStore,
  stored: StoredSandbox,
  version: string,
): AgentSandbox {
  const sandbox = stored.object;
  const meta = sandbox.metadata!;
  const key = `${meta.namespace}/${meta.name}`;
  const pod = store.pods.get(key);
  const owned = pod?.pod.metadata?.ownerReferences?.some((r) => r.uid === meta.uid);
  const service = store.services.get(key);
  const ready: Condition = {
    type: 'Ready',
    status: 'False',
    reason: 'DependenciesNotReady',
    message: 'Pod does not exist',
    lastTransitionTime: new Date().toISOString(),
    observedGeneration: 1,
  };
  if (stored.expired) {
    ready.reason = 'SandboxExpired';
    ready.message = 'Sandbox has expired';
  } else if (pod && owned) {
    const phase = pod.pod.status?.phase;
    if (phase === 'Failed') ready.reason = 'PodFailed';
    else if (phase === 'Succeeded') ready.reason = 'PodSucceeded';
    else if (phase === 'Running' && !pod.pod.metadata?.deletionTimestamp) {
      ready.message = 'Pod is Ready';
      if (sandbox.spec.service === true && !service) ready.message += '; Service does not exist';
      else {
        ready.status = 'True';
        ready.reason = 'DependenciesReady';
      }
    } else ready.message = `Pod exists with phase: ${phase}`;
  }
  return {
    ...sandbox,
    apiVersion: `agents.x-k8s.io/${version}`,
    status: {
      ...(service && !stored.expired
        ? {
            service: meta.name!,
            serviceFQDN: `${meta.name}.${meta.namespace}.svc.cluster.local`,
          }
        : {}),
      conditions: [ready],
      selector: `${NAME_HASH_LABEL}=${sandboxNameHash(meta.name!)}`,
      ...(ready.status === 'True' ? { podIPs: ['127.0.0.1'] } : {}),
    },
  };
}
