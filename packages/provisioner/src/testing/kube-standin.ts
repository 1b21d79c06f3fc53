import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { AgentSandbox, KubeNetworkPolicy, Pod, Service } from '../kube-objects.js';
import { AGENT_SANDBOX_VERSIONS_SERVED } from './agent-sandbox-validation.js';
import { servePodsAndServices, serveNamespaces } from './core-resources.js';
import type { KubeCall, KubeResource, KubeVerb } from './kube-call.js';
import { KubeObjectStore } from './kube-object-store.js';
import type { KubeObjectStoreOptions } from './kube-object-store.js';
import { injectedStatus, kubeStatus } from './kube-status.js';
import { serveSandboxes } from './sandbox-resource.js';
import { serveNetworkPolicies } from './network-policy-resource.js';

/**
 * A local stand-in for the Kubernetes API server (core/v1 Namespaces, Pods and Services: create,
 * read, list with label selectors, delete), with resourceVersions, the API's `Status` errors
 * (404 NotFound, 409 AlreadyExists, 422 Invalid), injectable faults (a transient 429 or 503, a
 * refused create) and a fake kubelet: a created Pod is started as a local server (by default a
 * minimal one answering the sandbox readiness path; a test passes the AIO stand-in) on a
 * 127.0.0.1 port, moved to `Running`, and its port is what a NodePort Service selecting it reports
 * as `nodePort`, so `http://127.0.0.1:<nodePort>` reaches it.
 *
 * Deliberate differences from a cluster: by default a NodePort is reported only once a selected
 * Pod runs (a cluster assigns one at once, but its traffic fails until then: the same wait, made
 * visible); `nodePorts: 'immediate'` assigns it at once, as a cluster does, with a proxy on it that
 * refuses connections until a selected Pod runs. Deletion (of Pods, and of Services while
 * terminations are held) sets `deletionTimestamp` and completes after `terminationDelayMs` or
 * when a held termination is released: a create meanwhile meets 409 AlreadyExists.
 *
 * This file is the server: routing a path to its resource, injected faults, the record of calls
 * and what a test drives. The objects and what the cluster does to them are `kube-object-store.ts`;
 * the resources are served by `core-resources.ts` and `sandbox-resource.ts`, the Sandbox
 * controller is `agent-sandbox-controller.ts`.
 */

export type { PodServer, PodServerFactory } from './local-servers.js';
export type { KubeResource, KubeVerb } from './kube-call.js';

export interface KubeFault {
  verb: KubeVerb;
  resource: KubeResource;
  status: number;
  /** How many matching calls fail (default 1). */
  times?: number;
  /** Only calls on this object name. */
  name?: string;
}

export type KubeStandinOptions = KubeObjectStoreOptions;

export interface KubeRequestRecord {
  method: string;
  path: string;
  verb: KubeVerb;
  resource: KubeResource;
  name: string | undefined;
  status: number;
}

/** Where a path leads: a core/v1 resource, or the Sandbox custom resource of one version. */
interface Route {
  resource: KubeResource;
  namespace: string | undefined;
  /** The name in the path (for the namespaces resource, the namespace's). */
  name: string | undefined;
  /** The Sandbox version, for the custom resource. */
  sandboxVersion: string | undefined;
  /** `networking.k8s.io/v1`: NetworkPolicies. */
  networking: boolean;
}

/**
 * `/api/v1/namespaces[/{ns}[/{resource}[/{name}]]]`, or the Sandbox custom resource at
 * `/apis/agents.x-k8s.io/{version}/namespaces/{ns}/sandboxes[/{name}]`; undefined for any other.
 */
function route(pathname: string, method: string): Route | undefined {
  const parts = pathname.split('/').filter(Boolean);
  const custom =
    parts[0] === 'apis' &&
    parts[1] === 'agents.x-k8s.io' &&
    AGENT_SANDBOX_VERSIONS_SERVED.includes(parts[2] ?? '') &&
    parts[3] === 'namespaces' &&
    parts[5] === 'sandboxes' &&
    parts.length <= 7;
  const networking =
    parts[0] === 'apis' &&
    parts[1] === 'networking.k8s.io' &&
    parts[2] === 'v1' &&
    parts[3] === 'namespaces' &&
    parts[5] === 'networkpolicies' &&
    parts.length <= 7;
  if (
    !custom &&
    !networking &&
    (parts[0] !== 'api' || parts[1] !== 'v1' || parts[2] !== 'namespaces')
  )
    return undefined;
  const at = custom || networking ? parts.slice(1) : parts;
  const namespace = at[3];
  return {
    resource: (at[4] ?? 'namespaces') as KubeResource,
    namespace,
    name: at[4] === undefined ? (method === 'POST' ? undefined : namespace) : at[5],
    sandboxVersion: custom ? parts[2] : undefined,
    networking,
  };
}

export class KubeStandin {
  readonly url: string;
  readonly requests: KubeRequestRecord[] = [];
  readonly #server: http.Server;
  readonly #store: KubeObjectStore;
  readonly #faults: (KubeFault & { left: number })[] = [];
  readonly #waiters = new Set<{ match: (r: KubeRequestRecord) => boolean; done: () => void }>();

  private constructor(server: http.Server, options: KubeStandinOptions) {
    this.#server = server;
    this.#store = new KubeObjectStore(options);
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  static async start(options: KubeStandinOptions = {}): Promise<KubeStandin> {
    // The handler needs the instance, and the instance needs the listening server's port.
    const holder: { standin?: KubeStandin } = {};
    const server = http.createServer((req, res) => void holder.standin!.#handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    holder.standin = new KubeStandin(server, options);
    return holder.standin;
  }

  /** Writes a kubeconfig pointing at this server into `dir`; returns its path. */
  async writeKubeconfig(dir: string, namespace = 'default'): Promise<string> {
    const file = path.join(dir, 'kubeconfig');
    const config = {
      apiVersion: 'v1',
      kind: 'Config',
      // Plain HTTP on loopback: the client allows it only with TLS verification off.
      clusters: [
        { name: 'standin', cluster: { server: this.url, 'insecure-skip-tls-verify': true } },
      ],
      users: [{ name: 'standin', user: { token: 'standin-token' } }],
      contexts: [{ name: 'standin', context: { cluster: 'standin', user: 'standin', namespace } }],
      'current-context': 'standin',
    };
    await writeFile(file, JSON.stringify(config));
    return file;
  }

  /** The next matching calls answer `status` instead of being served. */
  fail(fault: KubeFault): void {
    this.#faults.push({ ...fault, left: fault.times ?? 1 });
  }

  /** New Pods stay Pending until {@link resumeKubelet}. */
  pauseKubelet(): void {
    this.#store.pauseKubelet();
  }

  resumeKubelet(): void {
    this.#store.resumeKubelet();
  }

  /** Deleted Pods and Services stay terminating until {@link releaseTerminations}. */
  holdTerminations(): void {
    this.#store.holdTerminations();
  }

  releaseTerminations(): void {
    this.#store.releaseTerminations();
  }

  pods(namespace?: string): Pod[] {
    return [...this.#store.pods.values()]
      .map((s) => s.pod)
      .filter((p) => !namespace || p.metadata?.namespace === namespace);
  }

  services(namespace?: string): Service[] {
    return [...this.#store.services.values()].filter(
      (s) => !namespace || s.metadata?.namespace === namespace,
    );
  }

  /** NetworkPolicies, optionally of one namespace (as stored: validated and defaulted). */
  networkPolicies(namespace?: string): KubeNetworkPolicy[] {
    return [...this.#store.networkPolicies.values()].filter(
      (p) => !namespace || p.metadata?.namespace === namespace,
    );
  }

  /** Sandbox objects, optionally of one namespace (as stored, without status). */
  sandboxes(namespace?: string): AgentSandbox[] {
    return [...this.#store.sandboxes.values()]
      .map((s) => s.object)
      .filter((o) => !namespace || o.metadata?.namespace === namespace);
  }

  namespaces(): string[] {
    return [...this.#store.namespaces.keys()];
  }

  /**
   * Resolves once a call matching `match` has been served, counting calls from index `since` of
   * {@link requests} (default 0: at once if one already was).
   */
  nextCall(match: (r: KubeRequestRecord) => boolean, since = 0): Promise<void> {
    if (this.requests.slice(since).some(match)) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        match,
        done: () => {
          this.#waiters.delete(waiter);
          resolve();
        },
      };
      this.#waiters.add(waiter);
    });
  }

  /** Calls made, optionally of one verb and resource. */
  calls(verb?: KubeVerb, resource?: KubeResource): KubeRequestRecord[] {
    return this.requests.filter(
      (r) => (!verb || r.verb === verb) && (!resource || r.resource === resource),
    );
  }

  /** Puts an object in place as if someone else had made it (a half-created sandbox, say). */
  seed(kind: 'pod' | 'service', object: Pod | Service, createdSecondsAgo = 0): void {
    const meta = object.metadata!;
    const stamped = { ...object, metadata: this.#store.stamp(meta, {}, createdSecondsAgo) };
    const key = `${meta.namespace}/${meta.name}`;
    if (kind === 'pod') this.#store.addPod(key, stamped as Pod);
    else this.#store.services.set(key, stamped as Service);
  }

  /** Stops the server, every Pod server and every node-port proxy. */
  async close(): Promise<void> {
    await this.#store.close();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    let body: Record<string, unknown> = {};
    if (chunks.length > 0) {
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        // As the API server answers a body it cannot decode.
        return this.#send(res, 400, kubeStatus(400, 'BadRequest', 'the request body is not JSON'));
      }
    }
    const at = route(url.pathname, method);
    if (!at) {
      return this.#send(
        res,
        404,
        kubeStatus(404, 'NotFound', `the server could not find ${url.pathname}`),
      );
    }
    const { resource, namespace: ns, name } = at;
    const verb: KubeVerb =
      method === 'POST'
        ? 'create'
        : method === 'DELETE'
          ? 'delete'
          : name === undefined
            ? 'list'
            : 'read';
    const objectName = name ?? (body.metadata as { name?: string } | undefined)?.name;
    const record = (code: number) => {
      const entry: KubeRequestRecord = {
        method,
        path: url.pathname,
        verb,
        resource,
        name: objectName,
        status: code,
      };
      this.requests.push(entry);
      for (const waiter of [...this.#waiters]) if (waiter.match(entry)) waiter.done();
    };

    const fault = this.#faults.find(
      (f) =>
        f.left > 0 &&
        f.verb === verb &&
        f.resource === resource &&
        (!f.name || f.name === objectName),
    );
    if (fault) {
      fault.left--;
      record(fault.status);
      return this.#send(res, fault.status, injectedStatus(fault.status));
    }
    const call: KubeCall = {
      verb,
      namespace: ns,
      name,
      body,
      labelSelector: url.searchParams.get('labelSelector'),
      reply: (code, payload) => {
        record(code);
        this.#send(res, code, payload);
      },
    };

    if (resource === 'namespaces') return serveNamespaces(this.#store, call);
    const isSandboxes = resource === 'sandboxes' && at.sandboxVersion !== undefined;
    const isPolicies = resource === 'networkpolicies' && at.networking;
    if (!isSandboxes && !isPolicies && resource !== 'pods' && resource !== 'services') {
      return call.reply(404, kubeStatus(404, 'NotFound', `unknown resource ${resource}`));
    }
    if (!ns || !this.#store.namespaces.has(ns))
      return call.reply(404, kubeStatus(404, 'NotFound', `namespaces "${ns}" not found`));
    if (isSandboxes) return serveSandboxes(this.#store, at.sandboxVersion!, call);
    if (isPolicies) return serveNetworkPolicies(this.#store, call);
    return servePodsAndServices(this.#store, resource as 'pods' | 'services', call);
  }

  #send(res: http.ServerResponse, code: number, payload: unknown): void {
    const text = JSON.stringify(payload);
    res.writeHead(code, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  }
}
