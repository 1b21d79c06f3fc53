// The stand-in's objects and what a cluster does to them without being asked: resourceVersions and
// uids, a fake kubelet that starts a created Pod as a local server and moves it to `Running`,
// NodePort Services reporting that server's port, deletion that leaves an object terminating (for
// `terminationDelayMs`, or while terminations are held) before it goes, and the garbage collector
// that deletes what a deleted owner owned.

import { randomUUID } from 'node:crypto';
import type { AgentSandbox, KubeNetworkPolicy, ObjectMeta, Pod, Service } from '../kube-objects.js';
import { minimalPodServer, openNodePortProxy } from './local-servers.js';
import type { PodServer, PodServerFactory } from './local-servers.js';

export interface KubeObjectStoreOptions {
  podServer?: PodServerFactory;
  /** Milliseconds from a Pod delete until it is gone (default 0: on the next turn). */
  terminationDelayMs?: number;
  /**
   * When a NodePort Service gets its node port: `when-running` (default) once a selected Pod
   * runs; `immediate` at create, as a cluster does (connections are refused until a Pod runs).
   */
  nodePorts?: 'when-running' | 'immediate';
}

export interface StoredPod {
  pod: Pod;
  server: PodServer | undefined;
  starting: Promise<void> | undefined;
}

export interface StoredSandbox {
  object: AgentSandbox;
  /** The shutdownTime timer. */
  expiry: ReturnType<typeof setTimeout> | undefined;
  /** Past its shutdownTime with `shutdownPolicy: Retain`: kept, its Pod and Service gone. */
  expired: boolean;
}

/** Objects are keyed `<namespace>/<name>`. */
export class KubeObjectStore {
  readonly namespaces = new Map<string, Record<string, unknown>>();
  readonly pods = new Map<string, StoredPod>();
  readonly services = new Map<string, Service>();
  readonly sandboxes = new Map<string, StoredSandbox>();
  readonly networkPolicies = new Map<string, KubeNetworkPolicy>();
  readonly #options: KubeObjectStoreOptions;
  readonly #held = new Map<string, () => void>();
  readonly #proxies = new Map<string, PodServer>();
  #version = 1;
  #kubeletPaused = false;
  #holdTermination = false;

  constructor(options: KubeObjectStoreOptions) {
    this.#options = options;
  }

  /** The latest resourceVersion handed out (a list's). */
  get version(): string {
    return String(this.#version);
  }

  nextVersion(): string {
    return String(this.#version++);
  }

  /** The metadata a create writes: a fresh uid and resourceVersion, created now (or earlier). */
  stamp(metadata: object, extra: ObjectMeta = {}, createdSecondsAgo = 0): ObjectMeta {
    return {
      ...metadata,
      ...extra,
      uid: randomUUID(),
      resourceVersion: this.nextVersion(),
      creationTimestamp: new Date(Date.now() - createdSecondsAgo * 1000).toISOString(),
    };
  }

  /** New Pods stay Pending until {@link resumeKubelet}. */
  pauseKubelet(): void {
    this.#kubeletPaused = true;
  }

  resumeKubelet(): void {
    this.#kubeletPaused = false;
    for (const stored of this.pods.values()) void this.#startPod(stored);
  }

  /** Deleted Pods, Services and Sandboxes stay terminating until {@link releaseTerminations}. */
  holdTerminations(): void {
    this.#holdTermination = true;
  }

  get holdingTerminations(): boolean {
    return this.#holdTermination;
  }

  releaseTerminations(): void {
    this.#holdTermination = false;
    for (const finish of [...this.#held.values()]) finish();
  }

  /** Holds `finish` under `id` until terminations are released. */
  hold(id: string, finish: () => void): void {
    this.#held.set(id, () => {
      this.#held.delete(id);
      finish();
    });
  }

  /** Stores a Pod as `Pending` and hands it to the kubelet. */
  addPod(key: string, pod: Pod): StoredPod {
    const stored: StoredPod = {
      pod: { ...pod, status: { phase: 'Pending' } },
      server: undefined,
      starting: undefined,
    };
    this.pods.set(key, stored);
    void this.#startPod(stored);
    return stored;
  }

  async #startPod(stored: StoredPod): Promise<void> {
    if (
      this.#kubeletPaused ||
      stored.server ||
      stored.starting ||
      stored.pod.metadata?.deletionTimestamp
    )
      return;
    const factory = this.#options.podServer ?? minimalPodServer;
    stored.starting = (async () => {
      const server = await factory(stored.pod);
      stored.server = server;
      stored.pod.status = { phase: 'Running', podIP: '127.0.0.1' };
      stored.pod.metadata!.resourceVersion = this.nextVersion();
    })();
    await stored.starting;
  }

  /** Marks the Pod terminating; it goes after the termination delay, or when released. */
  terminatePod(key: string, stored: StoredPod): void {
    if (stored.pod.metadata!.deletionTimestamp) return;
    stored.pod.metadata!.deletionTimestamp = new Date().toISOString();
    stored.pod.metadata!.resourceVersion = this.nextVersion();
    const finish = () => {
      if (this.pods.get(key) === stored) this.pods.delete(key);
      void stopPod(stored);
    };
    if (this.#holdTermination) this.hold(`pods/${key}`, finish);
    else setTimeout(finish, this.#options.terminationDelayMs ?? 0);
  }

  /** Stores a Service; with `nodePorts: 'immediate'` a NodePort one gets its proxy at once. */
  async addService(key: string, service: Service): Promise<void> {
    this.services.set(key, service);
    if (this.#options.nodePorts === 'immediate' && service.spec?.type === 'NodePort') {
      const proxy = await openNodePortProxy(() => this.#nodePortFor(service));
      this.#proxies.set(key, proxy);
      service.spec = {
        ...service.spec,
        ports: (service.spec.ports ?? []).map((p) => ({ ...p, nodePort: proxy.port })),
      };
    }
  }

  /** Deletes a Service; while terminations are held it stays terminating, as with a finalizer. */
  deleteService(key: string, service: Service): void {
    const finish = () => {
      if (this.services.get(key) === service) this.#removeService(key);
    };
    if (!this.#holdTermination) return finish();
    if (service.metadata!.deletionTimestamp) return;
    service.metadata!.deletionTimestamp = new Date().toISOString();
    service.metadata!.resourceVersion = this.nextVersion();
    this.hold(`services/${key}`, finish);
  }

  #removeService(key: string): void {
    this.services.delete(key);
    const proxy = this.#proxies.get(key);
    this.#proxies.delete(key);
    void proxy?.close();
  }

  /** The port a selected running Pod's server listens on. */
  #nodePortFor(service: Service): number | undefined {
    const selector = service.spec?.selector ?? {};
    for (const stored of this.pods.values()) {
      if (stored.pod.metadata?.namespace !== service.metadata?.namespace) continue;
      if (stored.pod.metadata?.deletionTimestamp || !stored.server) continue;
      const labels = stored.pod.metadata?.labels ?? {};
      if (Object.entries(selector).every(([k, v]) => labels[k] === v)) return stored.server.port;
    }
    return undefined;
  }

  /** A Service as read: by default a NodePort one reports its port once a selected Pod runs. */
  presentService(service: Service): Service {
    if (service.spec?.type !== 'NodePort') return service;
    if (this.#options.nodePorts === 'immediate') return service;
    const nodePort = this.#nodePortFor(service);
    return {
      ...service,
      spec: {
        ...service.spec,
        ports: (service.spec.ports ?? []).map((p) =>
          nodePort === undefined ? p : { ...p, nodePort },
        ),
      },
    };
  }

  /** The Sandbox goes; what it owns is collected (background propagation). */
  deleteSandbox(key: string, stored: StoredSandbox): void {
    if (stored.expiry !== undefined) clearTimeout(stored.expiry);
    if (this.sandboxes.get(key) === stored) this.sandboxes.delete(key);
    this.collectOwnedBy(stored.object.metadata!.uid!);
  }

  /** The garbage collector: objects whose owner reference names a deleted owner are deleted. */
  collectOwnedBy(uid: string): void {
    const owned = (o: Pod | Service) => o.metadata?.ownerReferences?.some((r) => r.uid === uid);
    for (const [key, stored] of this.pods) if (owned(stored.pod)) this.terminatePod(key, stored);
    for (const [key, service] of this.services) if (owned(service)) this.#removeService(key);
  }

  /** Everything in it goes with it (at once: the stand-in has no namespace finalizer). */
  deleteNamespace(ns: string): void {
    this.namespaces.delete(ns);
    const inside = (key: string) => key.startsWith(`${ns}/`);
    for (const [key, s] of this.sandboxes) if (inside(key)) this.deleteSandbox(key, s);
    for (const [key, s] of this.pods) {
      if (!inside(key)) continue;
      this.pods.delete(key);
      void stopPod(s);
    }
    for (const key of [...this.services.keys()]) if (inside(key)) this.#removeService(key);
    for (const key of [...this.networkPolicies.keys()])
      if (inside(key)) this.networkPolicies.delete(key);
  }

  /** Stops every Pod server and every node-port proxy, and every expiry timer. */
  async close(): Promise<void> {
    for (const s of this.sandboxes.values()) if (s.expiry !== undefined) clearTimeout(s.expiry);
    await Promise.all([...this.#proxies.values()].map((p) => p.close()));
    this.#proxies.clear();
    await Promise.all([...this.pods.values()].map(stopPod));
  }
}

async function stopPod(stored: StoredPod): Promise<void> {
  await stored.starting;
  await stored.server?.close();
}
