import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Pod, Service } from '../kube-objects.js';
import { invalidMessage } from '../kube-rules.js';
import type { KubeCause } from '../kube-rules.js';
import { podCauses, serviceCauses } from './kube-validation.js';
import {
  AGENT_SANDBOX_VERSIONS_SERVED,
  agentSandboxCauses,
  sandboxNameHash,
} from './agent-sandbox-validation.js';
import type { AgentSandbox, Condition } from '../kube-objects.js';

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
 */

export interface PodServer {
  port: number;
  close(): Promise<void>;
}

export type PodServerFactory = (pod: Pod) => Promise<PodServer>;

export type KubeVerb = 'create' | 'read' | 'list' | 'delete';
export type KubeResource = 'namespaces' | 'pods' | 'services' | 'sandboxes';

export interface KubeFault {
  verb: KubeVerb;
  resource: KubeResource;
  status: number;
  /** How many matching calls fail (default 1). */
  times?: number;
  /** Only calls on this object name. */
  name?: string;
}

export interface KubeStandinOptions {
  podServer?: PodServerFactory;
  /** Milliseconds from a Pod delete until it is gone (default 0: on the next turn). */
  terminationDelayMs?: number;
  /**
   * When a NodePort Service gets its node port: `when-running` (default) once a selected Pod
   * runs; `immediate` at create, as a cluster does (connections are refused until a Pod runs).
   */
  nodePorts?: 'when-running' | 'immediate';
}

export interface KubeRequestRecord {
  method: string;
  path: string;
  verb: KubeVerb;
  resource: KubeResource;
  name: string | undefined;
  status: number;
}

interface NodePortProxy {
  port: number;
  close(): Promise<void>;
}

interface StoredSandbox {
  object: AgentSandbox;
  /** The shutdownTime timer. */
  expiry: ReturnType<typeof setTimeout> | undefined;
  /** Past its shutdownTime with `shutdownPolicy: Retain`: kept, its Pod and Service gone. */
  expired: boolean;
}

interface StoredPod {
  pod: Pod;
  server: PodServer | undefined;
  starting: Promise<void> | undefined;
}

function status(code: number, reason: string, message: string, details?: Record<string, unknown>) {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

/** The server's 422: `<Kind> "<name>" is invalid: ...`, with one cause per refused field. */
export function invalidStatus(
  kind: string,
  group: string,
  name: string,
  causes: readonly KubeCause[],
) {
  return status(422, 'Invalid', invalidMessage(kind, name, causes), {
    name,
    ...(group ? { group } : {}),
    kind,
    causes: causes.map((c) => ({ reason: c.reason, message: c.message, field: c.field })),
  });
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'AlreadyExists',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/** Equality-based label selectors: `k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated. */
export function matchesSelector(
  labels: Record<string, string> | undefined,
  selector: string | null,
): boolean {
  if (!selector) return true;
  const l = labels ?? {};
  return selector.split(',').every((raw) => {
    const term = raw.trim();
    if (term === '') return true;
    const ne = term.indexOf('!=');
    if (ne > 0) return l[term.slice(0, ne)] !== term.slice(ne + 2);
    const eq = term.indexOf('=');
    if (eq > 0) return l[term.slice(0, eq)] === term.slice(term[eq + 1] === '=' ? eq + 2 : eq + 1);
    if (term.startsWith('!')) return !(term.slice(1) in l);
    return term in l;
  });
}

async function minimalPodServer(): Promise<PodServer> {
  const server = http.createServer((req, res) => {
    res.writeHead(req.url?.startsWith('/v1/sandbox') ? 200 : 404, {
      'content-type': 'application/json',
    });
    res.end(JSON.stringify({ success: true, data: { home_dir: '/root' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export class KubeStandin {
  readonly url: string;
  readonly requests: KubeRequestRecord[] = [];
  readonly #server: http.Server;
  readonly #options: KubeStandinOptions;
  readonly #namespaces = new Map<string, Record<string, unknown>>();
  readonly #pods = new Map<string, StoredPod>();
  readonly #services = new Map<string, Service>();
  readonly #faults: (KubeFault & { left: number })[] = [];
  readonly #held = new Map<string, () => void>();
  readonly #proxies = new Map<string, NodePortProxy>();
  readonly #sandboxes = new Map<string, StoredSandbox>();
  readonly #waiters = new Set<{ match: (r: KubeRequestRecord) => boolean; done: () => void }>();
  #version = 1;
  #kubeletPaused = false;
  #holdTermination = false;

  private constructor(server: http.Server, options: KubeStandinOptions) {
    this.#server = server;
    this.#options = options;
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
    this.#kubeletPaused = true;
  }

  resumeKubelet(): void {
    this.#kubeletPaused = false;
    for (const stored of this.#pods.values()) void this.#startPod(stored);
  }

  /** Deleted Pods and Services stay terminating until {@link releaseTerminations}. */
  holdTerminations(): void {
    this.#holdTermination = true;
  }

  releaseTerminations(): void {
    this.#holdTermination = false;
    for (const finish of [...this.#held.values()]) finish();
  }

  pods(namespace?: string): Pod[] {
    return [...this.#pods.values()]
      .map((s) => s.pod)
      .filter((p) => !namespace || p.metadata?.namespace === namespace);
  }

  services(namespace?: string): Service[] {
    return [...this.#services.values()].filter(
      (s) => !namespace || s.metadata?.namespace === namespace,
    );
  }

  namespaces(): string[] {
    return [...this.#namespaces.keys()];
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
    const stamped = {
      ...object,
      metadata: {
        ...meta,
        uid: randomUUID(),
        resourceVersion: String(this.#version++),
        creationTimestamp: new Date(Date.now() - createdSecondsAgo * 1000).toISOString(),
      },
    };
    const key = `${meta.namespace}/${meta.name}`;
    if (kind === 'pod') {
      const stored: StoredPod = {
        pod: { ...(stamped as Pod), status: { phase: 'Pending' } },
        server: undefined,
        starting: undefined,
      };
      this.#pods.set(key, stored);
      void this.#startPod(stored);
    } else this.#services.set(key, stamped as Service);
  }

  /** Stops the server, every Pod server and every node-port proxy. */
  async close(): Promise<void> {
    for (const s of this.#sandboxes.values()) if (s.expiry !== undefined) clearTimeout(s.expiry);
    await Promise.all([...this.#proxies.values()].map((p) => p.close()));
    this.#proxies.clear();
    await Promise.all(
      [...this.#pods.values()].map(async (s) => {
        await s.starting;
        await s.server?.close();
      }),
    );
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
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
      stored.pod.metadata!.resourceVersion = String(this.#version++);
    })();
    await stored.starting;
  }

  #nodePortFor(service: Service): number | undefined {
    const selector = service.spec?.selector ?? {};
    for (const stored of this.#pods.values()) {
      if (stored.pod.metadata?.namespace !== service.metadata?.namespace) continue;
      if (stored.pod.metadata?.deletionTimestamp || !stored.server) continue;
      const labels = stored.pod.metadata?.labels ?? {};
      if (Object.entries(selector).every(([k, v]) => labels[k] === v)) return stored.server.port;
    }
    return undefined;
  }

  /** A node port assigned at once: a proxy to a selected running Pod, refusing until there is one. */
  async #openNodePort(key: string, service: Service): Promise<number> {
    const server = net.createServer((socket) => {
      const target = this.#nodePortFor(service);
      if (target === undefined) {
        socket.destroy();
        return;
      }
      const upstream = net.connect(target, '127.0.0.1');
      socket.pipe(upstream).pipe(socket);
      const end = () => {
        socket.destroy();
        upstream.destroy();
      };
      socket.on('error', end);
      upstream.on('error', end);
      socket.on('close', end);
      upstream.on('close', end);
    });
    const sockets = new Set<net.Socket>();
    server.on('connection', (c) => {
      sockets.add(c);
      c.on('close', () => sockets.delete(c));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    this.#proxies.set(key, {
      port,
      close: () =>
        new Promise<void>((resolve) => {
          for (const c of sockets) c.destroy();
          server.close(() => resolve());
        }),
    });
    return port;
  }

  #closeNodePort(key: string): void {
    const proxy = this.#proxies.get(key);
    this.#proxies.delete(key);
    void proxy?.close();
  }

  #present(service: Service): Service {
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

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const parts = url.pathname.split('/').filter(Boolean);
    const method = req.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    let body: Record<string, unknown> = {};
    if (chunks.length > 0) {
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        // As the API server answers a body it cannot decode.
        return this.#send(res, 400, status(400, 'BadRequest', 'the request body is not JSON'));
      }
    }

    // /api/v1/namespaces[/{ns}[/{resource}[/{name}]]], or the Sandbox custom resource at
    // /apis/agents.x-k8s.io/{version}/namespaces/{ns}/sandboxes[/{name}]
    const custom =
      parts[0] === 'apis' &&
      parts[1] === 'agents.x-k8s.io' &&
      AGENT_SANDBOX_VERSIONS_SERVED.includes(parts[2] ?? '') &&
      parts[3] === 'namespaces' &&
      parts[5] === 'sandboxes' &&
      parts.length <= 7;
    if (!custom && (parts[0] !== 'api' || parts[1] !== 'v1' || parts[2] !== 'namespaces')) {
      return this.#send(
        res,
        404,
        status(404, 'NotFound', `the server could not find ${url.pathname}`),
      );
    }
    const at = custom ? parts.slice(1) : parts;
    const ns = at[3];
    const resource = (at[4] ?? 'namespaces') as KubeResource;
    const name = at[4] === undefined ? (method === 'POST' ? undefined : ns) : at[5];
    const verb: KubeVerb =
      method === 'POST'
        ? 'create'
        : method === 'DELETE'
          ? 'delete'
          : name === undefined
            ? 'list'
            : 'read';
    const record = (code: number) => {
      const entry: KubeRequestRecord = {
        method,
        path: url.pathname,
        verb,
        resource,
        name: name ?? (body.metadata as { name?: string } | undefined)?.name,
        status: code,
      };
      this.requests.push(entry);
      for (const waiter of [...this.#waiters]) if (waiter.match(entry)) waiter.done();
    };

    const objectName = name ?? (body.metadata as { name?: string } | undefined)?.name;
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
      const reason = REASONS[fault.status] ?? 'Unknown';
      return this.#send(res, fault.status, status(fault.status, reason, `injected ${reason}`));
    }
    const reply = (code: number, payload: unknown) => {
      record(code);
      this.#send(res, code, payload);
    };

    if (resource === 'namespaces') {
      if (verb === 'create') {
        const nsName = (body.metadata as { name?: string } | undefined)?.name ?? '';
        if (this.#namespaces.has(nsName))
          return reply(409, status(409, 'AlreadyExists', `namespaces "${nsName}" already exists`));
        const created = {
          ...body,
          metadata: {
            ...(body.metadata as object),
            uid: randomUUID(),
            resourceVersion: String(this.#version++),
          },
        };
        this.#namespaces.set(nsName, created);
        return reply(201, created);
      }
      const found = ns ? this.#namespaces.get(ns) : undefined;
      if (!found) return reply(404, status(404, 'NotFound', `namespaces "${ns}" not found`));
      if (verb === 'delete') {
        // Everything in it goes with it (at once: the stand-in has no namespace finalizer).
        this.#namespaces.delete(ns!);
        for (const [key, s] of this.#sandboxes)
          if (key.startsWith(`${ns}/`)) this.#deleteSandbox(key, s);
        for (const [key, s] of this.#pods) {
          if (!key.startsWith(`${ns}/`)) continue;
          this.#pods.delete(key);
          void (async () => {
            await s.starting;
            await s.server?.close();
          })();
        }
        for (const key of [...this.#services.keys()]) {
          if (!key.startsWith(`${ns}/`)) continue;
          this.#services.delete(key);
          this.#closeNodePort(key);
        }
      }
      return reply(200, found);
    }
    if (resource === 'sandboxes' && custom) {
      if (!ns || !this.#namespaces.has(ns))
        return reply(404, status(404, 'NotFound', `namespaces "${ns}" not found`));
      return this.#serveSandboxes(verb, parts[2]!, ns, name, body, url, reply);
    }
    if (resource !== 'pods' && resource !== 'services') {
      return reply(404, status(404, 'NotFound', `unknown resource ${resource}`));
    }
    if (!ns || !this.#namespaces.has(ns))
      return reply(404, status(404, 'NotFound', `namespaces "${ns}" not found`));
    const kind = resource === 'pods' ? 'Pod' : 'Service';
    const store = resource === 'pods' ? this.#pods : this.#services;
    const unwrap = (v: StoredPod | Service): Pod | Service =>
      resource === 'pods' ? (v as StoredPod).pod : this.#present(v as Service);

    if (verb === 'list') {
      const selector = url.searchParams.get('labelSelector');
      const items = [...store.values()]
        .map(unwrap)
        .filter(
          (o) => o.metadata?.namespace === ns && matchesSelector(o.metadata?.labels, selector),
        );
      return reply(200, {
        kind: `${kind}List`,
        apiVersion: 'v1',
        metadata: { resourceVersion: String(this.#version) },
        items,
      });
    }
    if (verb === 'create') {
      const causes = kind === 'Pod' ? podCauses(body) : serviceCauses(body);
      const objName = (body.metadata as { name?: string } | undefined)?.name ?? '';
      if (causes.length > 0) return reply(422, invalidStatus(kind, '', objName, causes));
      const key = `${ns}/${objName}`;
      if (store.has(key))
        return reply(409, status(409, 'AlreadyExists', `${resource} "${objName}" already exists`));
      const metadata = {
        ...(body.metadata as object),
        namespace: ns,
        uid: randomUUID(),
        resourceVersion: String(this.#version++),
        creationTimestamp: new Date().toISOString(),
      };
      if (resource === 'pods') {
        const stored: StoredPod = {
          pod: { ...(body as Pod), metadata, status: { phase: 'Pending' } },
          server: undefined,
          starting: undefined,
        };
        this.#pods.set(key, stored);
        void this.#startPod(stored);
        return reply(201, stored.pod);
      }
      const service = { ...(body as Service), metadata };
      this.#services.set(key, service);
      if (this.#options.nodePorts === 'immediate' && service.spec?.type === 'NodePort') {
        const nodePort = await this.#openNodePort(key, service);
        service.spec = {
          ...service.spec,
          ports: (service.spec.ports ?? []).map((p) => ({ ...p, nodePort })),
        };
      }
      return reply(201, this.#present(service));
    }
    const key = `${ns}/${name}`;
    const found = store.get(key);
    if (!found) return reply(404, status(404, 'NotFound', `${resource} "${name}" not found`));
    if (verb === 'read') return reply(200, unwrap(found));
    // delete
    if (resource === 'services') {
      const service = found as Service;
      const finish = () => {
        this.#held.delete(`services/${key}`);
        if (this.#services.get(key) === service) {
          this.#services.delete(key);
          this.#closeNodePort(key);
        }
      };
      // As a Service with a finalizer: terminating until released, then gone.
      if (this.#holdTermination) {
        if (!service.metadata!.deletionTimestamp) {
          service.metadata!.deletionTimestamp = new Date().toISOString();
          service.metadata!.resourceVersion = String(this.#version++);
          this.#held.set(`services/${key}`, finish);
        }
      } else finish();
      return reply(200, this.#present(service));
    }
    const stored = found as StoredPod;
    if (!stored.pod.metadata!.deletionTimestamp) {
      stored.pod.metadata!.deletionTimestamp = new Date().toISOString();
      stored.pod.metadata!.resourceVersion = String(this.#version++);
      const finish = () => {
        this.#held.delete(`pods/${key}`);
        if (this.#pods.get(key) === stored) this.#pods.delete(key);
        void (async () => {
          await stored.starting;
          await stored.server?.close();
        })();
      };
      if (this.#holdTermination) this.#held.set(`pods/${key}`, finish);
      else setTimeout(finish, this.#options.terminationDelayMs ?? 0);
    }
    return reply(200, stored.pod);
  }

  /** The `Sandbox` custom resource, served as the API server serves a CRD's objects. */
  async #serveSandboxes(
    verb: KubeVerb,
    version: string,
    ns: string,
    name: string | undefined,
    body: Record<string, unknown>,
    url: URL,
    reply: (code: number, payload: unknown) => void,
  ): Promise<void> {
    const group = 'agents.x-k8s.io';
    if (verb === 'list') {
      const selector = url.searchParams.get('labelSelector');
      const items = [...this.#sandboxes.values()]
        .filter((s) => s.object.metadata?.namespace === ns)
        .map((s) => this.#presentSandbox(s, version))
        .filter((o) => matchesSelector(o.metadata?.labels, selector));
      return reply(200, {
        apiVersion: `${group}/${version}`,
        kind: 'SandboxList',
        metadata: { resourceVersion: String(this.#version) },
        items,
      });
    }
    if (verb === 'create') {
      const causes = agentSandboxCauses(version, body);
      const objName = (body.metadata as { name?: string } | undefined)?.name ?? '';
      if (causes.length > 0) return reply(422, invalidStatus('Sandbox', group, objName, causes));
      const key = `${ns}/${objName}`;
      if (this.#sandboxes.has(key)) {
        return reply(
          409,
          status(409, 'AlreadyExists', `sandboxes.${group} "${objName}" already exists`, {
            name: objName,
            group,
            kind: 'sandboxes',
          }),
        );
      }
      const object = {
        ...(body as unknown as AgentSandbox),
        metadata: {
          ...(body.metadata as object),
          namespace: ns,
          uid: randomUUID(),
          resourceVersion: String(this.#version++),
          creationTimestamp: new Date().toISOString(),
        },
      };
      // The status is a subresource: a create's status is dropped, as the server drops it.
      delete object.status;
      const stored: StoredSandbox = { object, expiry: undefined, expired: false };
      this.#sandboxes.set(key, stored);
      this.#reconcileSandbox(key, stored);
      return reply(201, this.#presentSandbox(stored, version));
    }
    const key = `${ns}/${name}`;
    const found = this.#sandboxes.get(key);
    if (!found)
      return reply(404, status(404, 'NotFound', `sandboxes.${group} "${name}" not found`));
    if (verb === 'read') return reply(200, this.#presentSandbox(found, version));
    // delete: the object goes; what it owns is collected (background propagation). While
    // terminations are held it stays terminating, as with a finalizer.
    if (this.#holdTermination) {
      if (!found.object.metadata!.deletionTimestamp) {
        found.object.metadata!.deletionTimestamp = new Date().toISOString();
        found.object.metadata!.resourceVersion = String(this.#version++);
        this.#held.set(`sandboxes/${key}`, () => {
          this.#held.delete(`sandboxes/${key}`);
          this.#deleteSandbox(key, found);
        });
      }
    } else this.#deleteSandbox(key, found);
    return reply(200, this.#presentSandbox(found, version));
  }

  #deleteSandbox(key: string, stored: StoredSandbox): void {
    if (stored.expiry !== undefined) clearTimeout(stored.expiry);
    if (this.#sandboxes.get(key) === stored) this.#sandboxes.delete(key);
    this.#collectOwnedBy(stored.object.metadata!.uid!);
  }

  /** The garbage collector: objects whose owner reference names a deleted owner are deleted. */
  #collectOwnedBy(uid: string): void {
    const owned = (o: Pod | Service) => o.metadata?.ownerReferences?.some((r) => r.uid === uid);
    for (const [key, stored] of this.#pods) {
      if (!owned(stored.pod) || stored.pod.metadata!.deletionTimestamp) continue;
      stored.pod.metadata!.deletionTimestamp = new Date().toISOString();
      const finish = () => {
        this.#held.delete(`pods/${key}`);
        if (this.#pods.get(key) === stored) this.#pods.delete(key);
        void (async () => {
          await stored.starting;
          await stored.server?.close();
        })();
      };
      if (this.#holdTermination) this.#held.set(`pods/${key}`, finish);
      else setTimeout(finish, this.#options.terminationDelayMs ?? 0);
    }
    for (const [key, service] of this.#services) {
      if (!owned(service)) continue;
      this.#services.delete(key);
      this.#closeNodePort(key);
    }
  }

  /**
   * The controller (kubernetes-sigs/agent-sandbox's, in small): a Pod named after the Sandbox
   * from its template (the template's labels plus the name-hash tracking label), a headless
   * Service of that name selecting it when `spec.service`, both owned by the Sandbox; at
   * `shutdownTime` both go, and the Sandbox too (`shutdownPolicy: Delete`) or it stays expired.
   */
  #reconcileSandbox(key: string, stored: StoredSandbox): void {
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
      this.#expire(key, stored);
      return;
    }
    const podKey = `${ns}/${meta.name}`;
    if (!this.#pods.has(podKey)) {
      const template = sandbox.spec.podTemplate;
      const pod: Pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: meta.name!,
          namespace: ns,
          labels: {
            ...(template.metadata?.labels ?? {}),
            'agents.x-k8s.io/sandbox-name-hash': hash,
          },
          ownerReferences: [owner],
          uid: randomUUID(),
          resourceVersion: String(this.#version++),
          creationTimestamp: new Date().toISOString(),
        },
        spec: structuredClone(template.spec),
        status: { phase: 'Pending' },
      };
      const entry: StoredPod = { pod, server: undefined, starting: undefined };
      this.#pods.set(podKey, entry);
      void this.#startPod(entry);
    }
    if (sandbox.spec.service === true && !this.#services.has(podKey)) {
      const ports = sandbox.spec.podTemplate.spec.containers.flatMap((c) =>
        (c.ports ?? []).map((p) => ({
          name: p.name,
          port: p.containerPort,
          targetPort: p.containerPort,
          protocol: p.protocol ?? 'TCP',
        })),
      );
      this.#services.set(podKey, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
          name: meta.name!,
          namespace: ns,
          labels: { 'agents.x-k8s.io/sandbox-name-hash': hash },
          ownerReferences: [owner],
          uid: randomUUID(),
          resourceVersion: String(this.#version++),
          creationTimestamp: new Date().toISOString(),
        },
        spec: {
          clusterIP: 'None',
          selector: { 'agents.x-k8s.io/sandbox-name-hash': hash },
          ports,
        },
      });
    }
    if (shutdown !== undefined) {
      // Timers cap at about 24.8 days; a later shutdown is re-armed when this one fires.
      const delay = Math.min(shutdown - Date.now(), 2_000_000_000);
      stored.expiry = setTimeout(() => this.#reconcileSandbox(key, stored), delay);
      stored.expiry.unref();
    }
  }

  #expire(key: string, stored: StoredSandbox): void {
    stored.expired = true;
    this.#collectOwnedBy(stored.object.metadata!.uid!);
    if (stored.object.spec.shutdownPolicy === 'Delete') this.#deleteSandbox(key, stored);
  }

  /** A Sandbox as read: its status computed from what it owns, as the controller writes it. */
  #presentSandbox(stored: StoredSandbox, version: string): AgentSandbox {
    const sandbox = stored.object;
    const meta = sandbox.metadata!;
    const key = `${meta.namespace}/${meta.name}`;
    const pod = this.#pods.get(key);
    const owned = pod?.pod.metadata?.ownerReferences?.some((r) => r.uid === meta.uid);
    const service = this.#services.get(key);
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
        selector: `agents.x-k8s.io/sandbox-name-hash=${sandboxNameHash(meta.name!)}`,
        ...(ready.status === 'True' ? { podIPs: ['127.0.0.1'] } : {}),
      },
    };
  }

  /** Sandbox objects, optionally of one namespace (as stored, without status). */
  sandboxes(namespace?: string): AgentSandbox[] {
    return [...this.#sandboxes.values()]
      .map((s) => s.object)
      .filter((o) => !namespace || o.metadata?.namespace === namespace);
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
