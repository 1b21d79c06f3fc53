import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { HostShellMachine } from './host-shell-machine.js';
import { StandinExecd } from './standin-execd.js';
import type { StandinCommandRequest } from './standin-execd.js';
import { close, error, headerOf, json, listen, readJson } from './standin-http.js';

export type { StandinCommandRequest } from './standin-execd.js';

/**
 * A local stand-in for an OpenSandbox deployment, so the real `@alibaba-group/opensandbox` SDK can
 * be driven end to end without a server: one `node:http` listener on 127.0.0.1 serves the
 * lifecycle API under `/v1` (create, get, list, delete, renew-expiration, endpoints, metrics
 * events) and the execd API (`StandinExecd`) through the server proxy
 * (`/v1/sandboxes/<id>/proxy/44772/...`); each sandbox also gets its own execd listener for direct
 * endpoints (`use_server_proxy: false`). Each sandbox is a `HostShellMachine`.
 */

export const EXECD_PORT = 44772;
export const EGRESS_PORT = 18080;
export const API_KEY_HEADER = 'open-sandbox-api-key';
/** Returned with direct endpoints (as an ingress gateway would) and recorded when sent back. */
export const INGRESS_HEADER = 'opensandbox-ingress-to';

export interface OpenSandboxStandinOptions {
  /** When set, lifecycle calls without this `OPEN-SANDBOX-API-KEY` get 401. */
  apiKey?: string;
}

export interface StandinRequest {
  readonly listener: 'lifecycle' | 'execd-direct';
  readonly method: string;
  readonly path: string;
  readonly apiKey: string | undefined;
  readonly ingress: string | undefined;
}

export interface StandinSandbox {
  readonly id: string;
  readonly request: Record<string, unknown>;
  readonly metadata: Record<string, string>;
  readonly env: Record<string, string>;
  readonly createdAt: Date;
  expiresAt: Date | undefined;
  readonly machine: HostShellMachine;
  readonly execd: Server;
  readonly execdPort: number;
}

export class OpenSandboxStandin {
  readonly requests: StandinRequest[] = [];
  readonly createRequests: Record<string, unknown>[] = [];
  readonly renewRequests: { sandboxId: string; expiresAt: string }[] = [];
  readonly commandRequests: StandinCommandRequest[] = [];
  readonly metricsEvents: unknown[] = [];
  /** Live sandboxes (deleted ones are removed, as the server answers 404 for them). */
  readonly sandboxes = new Map<string, StandinSandbox>();
  readonly #deleted: StandinSandbox[] = [];
  readonly #metricsWaiters: ((event: unknown) => void)[] = [];
  readonly #options: OpenSandboxStandinOptions;
  readonly #execd = new StandinExecd(this.commandRequests);
  readonly #server: Server;
  #port = 0;

  private constructor(options: OpenSandboxStandinOptions) {
    this.#options = options;
    this.#server = createServer((req, res) => {
      void this.#lifecycle(req, res).catch((e: unknown) => this.#crash(res, e));
    });
  }

  static async start(options: OpenSandboxStandinOptions = {}): Promise<OpenSandboxStandin> {
    const standin = new OpenSandboxStandin(options);
    standin.#port = await listen(standin.#server);
    return standin;
  }

  /** `host:port` to give the SDK as `domain`. */
  get domain(): string {
    return `127.0.0.1:${this.#port}`;
  }

  get url(): string {
    return `http://${this.domain}`;
  }

  sandbox(id: string): StandinSandbox {
    const found = this.sandboxes.get(id) ?? this.#deleted.find((s) => s.id === id);
    if (found === undefined) throw new Error(`no stand-in sandbox ${id}`);
    return found;
  }

  /** The next telemetry event the SDK posts (it sends them without waiting for the answer). */
  nextMetricsEvent(): Promise<unknown> {
    return new Promise((resolve) => this.#metricsWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    const all = [...this.sandboxes.values(), ...this.#deleted];
    this.sandboxes.clear();
    await Promise.all(all.map((s) => close(s.execd)));
    await close(this.#server);
    await Promise.all(all.map((s) => s.machine.dispose()));
  }

  // -------------------------------------------------------------------------------------------
  // lifecycle API

  async #lifecycle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const path = url.pathname;
    this.requests.push({
      listener: 'lifecycle',
      method: req.method ?? 'GET',
      path,
      apiKey: headerOf(req, API_KEY_HEADER),
      ingress: headerOf(req, INGRESS_HEADER),
    });

    const proxied = /^\/v1\/sandboxes\/([^/]+)\/proxy\/(\d+)(\/.*)?$/.exec(path);
    if (proxied) {
      const sandbox = this.sandboxes.get(decodeURIComponent(proxied[1]!));
      if (sandbox === undefined || Number(proxied[2]) !== EXECD_PORT) {
        error(res, 404, 'NOT_FOUND', `sandbox ${proxied[1]} not found`);
        return;
      }
      await this.#execd.serve(sandbox, req, res, proxied[3] ?? '/', url.searchParams);
      return;
    }

    if (
      this.#options.apiKey !== undefined &&
      headerOf(req, API_KEY_HEADER) !== this.#options.apiKey
    ) {
      error(res, 401, 'UNAUTHORIZED', 'missing or invalid OPEN-SANDBOX-API-KEY');
      return;
    }

    if (path === '/v1/metrics/events' && req.method === 'POST') {
      const event = await readJson(req);
      this.metricsEvents.push(event);
      for (const waiter of this.#metricsWaiters.splice(0)) waiter(event);
      res.writeHead(202).end();
      return;
    }
    if (path === '/v1/sandboxes' && req.method === 'POST') return this.#create(req, res);
    if (path === '/v1/sandboxes' && req.method === 'GET') return this.#list(url, res);

    const one = /^\/v1\/sandboxes\/([^/]+)(?:\/(renew-expiration|endpoints\/(\d+)))?$/.exec(path);
    if (one) {
      const id = decodeURIComponent(one[1]!);
      const sandbox = this.sandboxes.get(id);
      if (sandbox === undefined) {
        error(res, 404, 'NOT_FOUND', `Sandbox ${id} not found`);
        return;
      }
      if (one[2] === undefined && req.method === 'GET') {
        json(res, 200, this.#describe(sandbox));
        return;
      }
      if (one[2] === undefined && req.method === 'DELETE') {
        this.sandboxes.delete(id);
        this.#deleted.push(sandbox);
        await close(sandbox.execd);
        res.writeHead(204).end();
        return;
      }
      if (one[2] === 'renew-expiration' && req.method === 'POST') {
        const body = await readJson(req);
        const expiresAt =
          typeof body?.expiresAt === 'string' ? new Date(body.expiresAt) : undefined;
        if (expiresAt === undefined || Number.isNaN(expiresAt.getTime())) {
          error(res, 400, 'INVALID_REQUEST', 'expiresAt must be an RFC 3339 timestamp');
          return;
        }
        this.renewRequests.push({ sandboxId: id, expiresAt: body!.expiresAt as string });
        sandbox.expiresAt = expiresAt;
        json(res, 200, { expiresAt: expiresAt.toISOString() });
        return;
      }
      if (one[3] !== undefined && req.method === 'GET') {
        const port = Number(one[3]);
        if (url.searchParams.get('use_server_proxy') === 'true') {
          json(res, 200, { endpoint: `${this.domain}/v1/sandboxes/${id}/proxy/${port}` });
        } else if (port === EXECD_PORT) {
          json(res, 200, {
            endpoint: `127.0.0.1:${sandbox.execdPort}`,
            headers: { [INGRESS_HEADER]: `${id}-${port}` },
          });
        } else {
          // The egress sidecar is not played; its endpoint only has to resolve.
          json(res, 200, { endpoint: `127.0.0.1:${this.#port}/egress/${id}` });
        }
        return;
      }
    }
    error(res, 404, 'NOT_FOUND', `no route for ${req.method} ${path}`);
  }

  async #create(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    if (body === undefined) {
      error(res, 400, 'INVALID_REQUEST', 'body must be a JSON object');
      return;
    }
    this.createRequests.push(body);
    const image = (body.image as { uri?: unknown } | undefined)?.uri;
    if (typeof image !== 'string' || image === '') {
      error(res, 400, 'INVALID_REQUEST', 'image.uri is required');
      return;
    }
    const env = (body.env ?? {}) as Record<string, string>;
    const metadata = (body.metadata ?? {}) as Record<string, string>;
    const id = randomUUID();
    const machine = await HostShellMachine.create(env);
    const createdAt = new Date();
    const timeout = typeof body.timeout === 'number' ? body.timeout : undefined;
    // A sandbox holder is needed by the execd listener before the record exists.
    const holder: { sandbox?: StandinSandbox } = {};
    const execd = createServer((r, s) => {
      const u = new URL(r.url ?? '/', 'http://execd');
      this.requests.push({
        listener: 'execd-direct',
        method: r.method ?? 'GET',
        path: u.pathname,
        apiKey: headerOf(r, API_KEY_HEADER),
        ingress: headerOf(r, INGRESS_HEADER),
      });
      void this.#execd
        .serve(holder.sandbox!, r, s, u.pathname, u.searchParams)
        .catch((e: unknown) => this.#crash(s, e));
    });
    const execdPort = await listen(execd);
    const sandbox: StandinSandbox = {
      id,
      request: body,
      metadata,
      env,
      createdAt,
      expiresAt: timeout === undefined ? undefined : new Date(createdAt.getTime() + timeout * 1000),
      machine,
      execd,
      execdPort,
    };
    holder.sandbox = sandbox;
    this.sandboxes.set(id, sandbox);
    json(res, 202, {
      id,
      status: { state: 'Running' },
      metadata,
      entrypoint: body.entrypoint ?? [],
      createdAt: createdAt.toISOString(),
      ...(sandbox.expiresAt ? { expiresAt: sandbox.expiresAt.toISOString() } : {}),
    });
  }

  #describe(sandbox: StandinSandbox): Record<string, unknown> {
    return {
      id: sandbox.id,
      image: sandbox.request.image,
      status: { state: 'Running' },
      metadata: sandbox.metadata,
      entrypoint: sandbox.request.entrypoint ?? [],
      createdAt: sandbox.createdAt.toISOString(),
      ...(sandbox.expiresAt ? { expiresAt: sandbox.expiresAt.toISOString() } : {}),
    };
  }

  #list(url: URL, res: ServerResponse): void {
    const filter = new URLSearchParams(url.searchParams.get('metadata') ?? '');
    const states = url.searchParams.getAll('state');
    const page = Number(url.searchParams.get('page') ?? 1);
    const pageSize = Number(url.searchParams.get('pageSize') ?? 20);
    const matching = [...this.sandboxes.values()].filter(
      (s) =>
        [...filter].every(([k, v]) => s.metadata[k] === v) &&
        (states.length === 0 || states.includes('Running')),
    );
    const items = matching
      .slice((page - 1) * pageSize, page * pageSize)
      .map((s) => this.#describe(s));
    const totalPages = Math.max(1, Math.ceil(matching.length / pageSize));
    json(res, 200, {
      items,
      pagination: {
        page,
        pageSize,
        totalItems: matching.length,
        totalPages,
        hasNextPage: page < totalPages,
      },
    });
  }

  /** A handler that threw: a 500 while the answer has not started, else the answer is cut off. */
  #crash(res: ServerResponse, e: unknown): void {
    if (!res.headersSent) {
      error(res, 500, 'INTERNAL_ERROR', e instanceof Error ? e.message : String(e));
    } else {
      res.destroy(e instanceof Error ? e : new Error(String(e)));
    }
  }
}
