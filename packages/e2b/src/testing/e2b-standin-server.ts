import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { LocalVm } from './local-vm.js';
import { processRpc } from './standin-process-rpc.js';
import { CONNECT_STATUS, json, readBody } from './standin-http.js';

/**
 * A local stand-in for E2B's two HTTP surfaces, enough for the real `e2b` SDK (2.51) to run a
 * sandbox's whole life against it on 127.0.0.1:
 *
 * - control plane (JSON, `X-API-KEY`): `POST /v2/sandboxes`, `GET /v2/sandboxes` (metadata filter,
 *   `limit`/`nextToken` paging through the `x-next-token` header), `POST /v2/sandboxes/{id}/connect`,
 *   `GET /sandboxes/{id}`, `POST /sandboxes/{id}/timeout`, `POST /sandboxes/{id}/pause` (409 when
 *   already paused; a connect resumes it), `DELETE /sandboxes/{id}`;
 * - envd, demultiplexed by the `E2b-Sandbox-Id` header: `GET /health`, `GET /files` (raw bytes),
 *   `POST /files` (multipart or octet-stream), the Connect-protocol JSON unary RPCs
 *   `filesystem.Filesystem/{MakeDir,Stat,Remove}`, and envd's process service: `Start` and
 *   `Connect` (server-streaming `application/connect+json` envelopes), `List`, `SendInput`,
 *   `CloseStdin`, `SendSignal` (see `standin-process-rpc.ts`).
 *
 * VMs are `LocalVm`s (host temp directories, real `bash`). A VM that is gone answers envd calls
 * with 502 "The sandbox was not found", as E2B's edge proxy does. Point the SDK at it with
 * `apiUrl: server.url, sandboxUrl: server.url` (or `E2B_API_URL` / `E2B_SANDBOX_URL`).
 */
export interface StandinVm {
  readonly sandboxId: string;
  readonly templateId: string;
  readonly metadata: Record<string, string>;
  readonly envs: Record<string, string>;
  timeoutSeconds: number | undefined;
  alive: boolean;
  /** Paused (`POST /sandboxes/{id}/pause`): envd does not answer until a connect resumes it. */
  paused: boolean;
  readonly startedAt: Date;
  readonly vm: LocalVm;
}

export interface StandinRequest {
  method: string;
  path: string;
  sandboxId: string | undefined;
}

/** A hold on the control plane's kills; see `E2BStandinServer.holdKills`. */
export interface StandinKillHold {
  /** Resolves with the sandbox id of the first kill that arrived while the hold is on. */
  readonly held: Promise<string>;
  /** Lets every held kill (and any later one) go through. Idempotent. */
  release(): void;
}

export interface E2BStandinServerOptions {
  /** Accepted API key; requests without it get 401. Default `e2b_standin_key`. */
  apiKey?: string;
  /** envd version reported to the SDK. Default `0.5.7` (octet-stream uploads, no legacy user). */
  envdVersion?: string;
  /** Page size when the client sends none. Default 100. */
  defaultPageSize?: number;
}

const ENVD_PORT = '49983';

export class E2BStandinServer {
  readonly apiKey: string;
  readonly envdVersion: string;
  readonly vms = new Map<string, StandinVm>();
  /** Every request, in order (method, path without query, sandbox id for envd calls). */
  readonly requests: StandinRequest[] = [];
  readonly #server: http.Server;
  readonly #pageSize: number;
  #root: string | undefined;
  #url: string | undefined;
  #killHold: { arrived(id: string): void; released: Promise<void>; release(): void } | undefined;

  constructor(options: E2BStandinServerOptions = {}) {
    this.apiKey = options.apiKey ?? 'e2b_standin_key';
    this.envdVersion = options.envdVersion ?? '0.5.7';
    this.#pageSize = options.defaultPageSize ?? 100;
    this.#server = http.createServer((req, res) => {
      this.#handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) json(res, 500, { code: 500, message: String(error) });
        else res.destroy();
      });
    });
  }

  get url(): string {
    if (this.#url === undefined) throw new Error('stand-in server is not listening');
    return this.#url;
  }

  async start(): Promise<this> {
    this.#root = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-standin-'));
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const { port } = this.#server.address() as AddressInfo;
    this.#url = `http://127.0.0.1:${port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.#killHold?.release();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    if (this.#root) await rm(this.#root, { recursive: true, force: true });
  }

  /**
   * Holds every kill (`DELETE /sandboxes/{id}`) until `release()`, as a slow control plane would:
   * the VM stays alive, listed and reachable meanwhile, and the kill takes effect once released.
   * Lets a test keep a kill in flight for as long as it needs (past a lease TTL, say) without
   * guessing a delay. One hold at a time.
   */
  holdKills(): StandinKillHold {
    if (this.#killHold !== undefined) throw new Error('kills are already held');
    let arrived!: (id: string) => void;
    const held = new Promise<string>((resolve) => (arrived = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const hold = {
      arrived,
      released,
      release: () => {
        if (this.#killHold === hold) this.#killHold = undefined;
        release();
      },
    };
    this.#killHold = hold;
    return { held, release: hold.release };
  }

  /** The control plane reaps a VM behind the client's back (idle timeout). */
  reap(sandboxId: string): void {
    const vm = this.vms.get(sandboxId);
    if (vm) vm.alive = false;
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://standin');
    const envdId = req.headers['e2b-sandbox-id'];
    const sandboxId = typeof envdId === 'string' ? envdId : undefined;
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, sandboxId });
    if (sandboxId !== undefined) {
      if (req.headers['e2b-sandbox-port'] !== ENVD_PORT)
        return json(res, 400, { code: 400, message: 'bad port' });
      return this.#envd(req, res, url, sandboxId);
    }
    if (req.headers['x-api-key'] !== this.apiKey)
      return json(res, 401, { code: 401, message: 'Invalid API key' });
    return this.#api(req, res, url);
  }

  // ---------------------------------------------------------------------------------------------
  // control plane

  #info(vm: StandinVm) {
    return {
      sandboxID: vm.sandboxId,
      templateID: vm.templateId,
      clientID: 'standin',
      metadata: vm.metadata,
      startedAt: vm.startedAt.toISOString(),
      endAt: new Date(vm.startedAt.getTime() + (vm.timeoutSeconds ?? 300) * 1000).toISOString(),
      state: vm.paused ? 'paused' : 'running',
      cpuCount: 2,
      memoryMB: 512,
      envdVersion: this.envdVersion,
      diskSizeMB: 1024,
    };
  }

  #sandboxReply(vm: StandinVm) {
    return {
      sandboxID: vm.sandboxId,
      templateID: vm.templateId,
      clientID: 'standin',
      envdVersion: this.envdVersion,
    };
  }

  async #api(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const parts = url.pathname.split('/').filter(Boolean);
    const notFound = (id: string) =>
      json(res, 404, { code: 404, message: `sandbox "${id}" not found` });
    if (method === 'POST' && url.pathname === '/v2/sandboxes') {
      const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as {
        templateID?: string;
        metadata?: Record<string, string>;
        envVars?: Record<string, string>;
        timeout?: number;
      };
      const sandboxId = `i${randomBytes(6).toString('hex')}`;
      const vm = new LocalVm(path.join(this.#root as string, sandboxId), body.envVars ?? {});
      await vm.init();
      const record: StandinVm = {
        sandboxId,
        templateId: body.templateID ?? 'base',
        metadata: { ...(body.metadata ?? {}) },
        envs: { ...(body.envVars ?? {}) },
        timeoutSeconds: body.timeout,
        alive: true,
        paused: false,
        startedAt: new Date(),
        vm,
      };
      this.vms.set(sandboxId, record);
      return json(res, 201, this.#sandboxReply(record));
    }
    if (method === 'GET' && url.pathname === '/v2/sandboxes') {
      // The SDK sends `metadata` as URL-encoded `k=v&k2=v2` whose keys and values were already
      // URI-encoded once; `URL` decoded the outer layer.
      const wanted: Record<string, string> = {};
      const raw = url.searchParams.get('metadata');
      if (raw) {
        for (const [k, v] of new URLSearchParams(raw))
          wanted[decodeURIComponent(k)] = decodeURIComponent(v);
      }
      const states = url.searchParams.getAll('state');
      const limit = Number(url.searchParams.get('limit') ?? this.#pageSize);
      const offset = Number(url.searchParams.get('nextToken') ?? 0);
      const all = [...this.vms.values()].filter(
        (vm) =>
          vm.alive &&
          (states.length === 0 || states.includes(vm.paused ? 'paused' : 'running')) &&
          Object.entries(wanted).every(([k, v]) => vm.metadata[k] === v),
      );
      const page = all.slice(offset, offset + limit);
      const headers: http.OutgoingHttpHeaders = {};
      if (offset + limit < all.length) headers['x-next-token'] = String(offset + limit);
      return json(
        res,
        200,
        page.map((vm) => this.#info(vm)),
        headers,
      );
    }
    if (
      parts[0] === 'v2' &&
      parts[1] === 'sandboxes' &&
      parts[3] === 'connect' &&
      method === 'POST'
    ) {
      const id = parts[2] as string;
      const vm = this.vms.get(id);
      if (!vm?.alive) return notFound(id);
      const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as {
        timeout?: number;
      };
      if (body.timeout !== undefined && (vm.timeoutSeconds ?? 0) < body.timeout)
        vm.timeoutSeconds = body.timeout;
      // Connecting to a paused sandbox resumes it (201), a running one answers 200.
      const resumed = vm.paused;
      vm.paused = false;
      return json(res, resumed ? 201 : 200, this.#sandboxReply(vm));
    }
    if (parts[0] === 'sandboxes' && parts[1] !== undefined) {
      const id = parts[1];
      const vm = this.vms.get(id);
      if (method === 'DELETE' && parts.length === 2) {
        const hold = this.#killHold;
        if (hold !== undefined && vm?.alive) {
          hold.arrived(id);
          await hold.released;
        }
        if (!vm?.alive) return notFound(id);
        vm.alive = false;
        res.writeHead(204).end();
        return;
      }
      if (method === 'POST' && parts[2] === 'pause') {
        await readBody(req);
        if (!vm?.alive) return notFound(id);
        if (vm.paused)
          return json(res, 409, { code: 409, message: `Sandbox ${id} is already paused` });
        vm.paused = true;
        res.writeHead(204).end();
        return;
      }
      if (method === 'POST' && parts[2] === 'timeout') {
        if (!vm?.alive) return notFound(id);
        const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as {
          timeout?: number;
        };
        vm.timeoutSeconds = body.timeout;
        res.writeHead(204).end();
        return;
      }
      if (method === 'GET' && parts.length === 2) {
        if (!vm?.alive) return notFound(id);
        return json(res, 200, this.#info(vm));
      }
    }
    json(res, 404, { code: 404, message: `no route ${method} ${url.pathname}` });
  }

  // ---------------------------------------------------------------------------------------------
  // envd

  async #envd(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    sandboxId: string,
  ): Promise<void> {
    const record = this.vms.get(sandboxId);
    // A paused VM is as unreachable through the edge proxy as a gone one.
    if (!record?.alive || record.paused) {
      await readBody(req);
      return json(res, 502, { code: 502, message: 'The sandbox was not found', sandboxId });
    }
    const vm = record.vm;
    const method = req.method ?? 'GET';
    if (url.pathname === '/health') {
      res.writeHead(204).end();
      return;
    }
    if (url.pathname === '/files') {
      const filePath = url.searchParams.get('path') ?? '';
      if (method === 'GET') {
        let data: Uint8Array;
        try {
          data = await vm.readBytes(filePath);
        } catch {
          return json(res, 404, { code: 404, message: `path '${filePath}' does not exist` });
        }
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': data.byteLength,
        });
        res.end(Buffer.from(data));
        return;
      }
      if (method === 'POST') {
        const body = await readBody(req);
        const type = req.headers['content-type'] ?? '';
        const written: { name: string; type: string; path: string }[] = [];
        if (type.startsWith('multipart/form-data')) {
          const form = await new Response(body, { headers: { 'content-type': type } }).formData();
          for (const [, value] of form.entries()) {
            if (typeof value === 'string') continue;
            const target = filePath || value.name;
            await vm.writeBytes(target, new Uint8Array(await value.arrayBuffer()));
            written.push({ name: path.posix.basename(target), type: 'file', path: target });
          }
        } else {
          await vm.writeBytes(filePath, new Uint8Array(body));
          written.push({ name: path.posix.basename(filePath), type: 'file', path: filePath });
        }
        return json(res, 200, written);
      }
    }
    if (url.pathname.startsWith('/filesystem.Filesystem/'))
      return this.#filesystemRpc(req, res, url, vm);
    if (url.pathname.startsWith('/process.Process/')) {
      return processRpc(req, res, url.pathname.slice('/process.Process/'.length), vm, record);
    }
    json(res, 404, { code: 404, message: `no envd route ${method} ${url.pathname}` });
  }

  async #filesystemRpc(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    vm: LocalVm,
  ): Promise<void> {
    const rpc = url.pathname.split('/').pop();
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as { path?: string };
    const p = body.path ?? '';
    const fail = (code: string, message: string) =>
      json(res, CONNECT_STATUS[code] ?? 500, { code, message });
    const entry = async () => {
      const info = await vm.info(p);
      return {
        name: path.posix.basename(p),
        type:
          info.type === 'dir'
            ? 'FILE_TYPE_DIRECTORY'
            : info.type === 'symlink'
              ? 'FILE_TYPE_SYMLINK'
              : 'FILE_TYPE_FILE',
        path: p,
        size: String(info.size),
        mode: 0o644,
        permissions: '-rw-r--r--',
        owner: 'user',
        group: 'user',
        ...(info.symlinkTarget ? { symlinkTarget: info.symlinkTarget } : {}),
      };
    };
    switch (rpc) {
      case 'MakeDir':
        if (!(await vm.makeDir(p)))
          return fail('already_exists', `directory '${p}' already exists`);
        return json(res, 200, { entry: await entry() });
      case 'Stat':
        try {
          return json(res, 200, { entry: await entry() });
        } catch {
          return fail('not_found', `path '${p}' does not exist`);
        }
      case 'Remove':
        await vm.remove(p);
        return json(res, 200, {});
      default:
        return fail('unimplemented', `${rpc} is not part of the stand-in`);
    }
  }
}
