import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  canonicalSkillsRoot,
  isSbxError,
  parseNetworkPolicy,
  provisionerExtraMountPaths,
  SandboxRuntimeError,
} from '@sbx/core';
import { PROVISIONER_MAX_EXTRA_MOUNTS } from '@sbx/core/internal';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStandin } from './aio-standin.fixture.js';
import type { StandinFixture } from './aio-standin.fixture.js';
import { RemoteSandboxBackend } from './remote-sandbox-backend.js';

interface Received {
  method: string;
  path: string;
  apiKey: string | undefined;
  body: Record<string, unknown> | undefined;
}

/**
 * A stand-in of the provisioner's HTTP API on 127.0.0.1: sandboxes in memory, each served by the
 * in-process AIO stand-in, the API-key rule of the real one (401 on /api/* without the key), and
 * per-route overrides for failure cases.
 */
class ProvisionerStandin {
  received: Received[] = [];
  sandboxes = new Map<string, { status: string }>();
  override: ((r: Received) => { status: number; body: unknown } | 'hang' | undefined) | undefined;
  url = '';
  private server: http.Server;

  constructor(
    private readonly aioUrl: string,
    private readonly apiKey: string,
  ) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    const r: Received = {
      method: req.method ?? 'GET',
      path,
      apiKey: req.headers['x-api-key'] as string | undefined,
      body: raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined,
    };
    this.received.push(r);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    const custom = this.override?.(r);
    if (custom === 'hang') return; // never answers
    if (custom) return send(custom.status, custom.body);
    if (path === '/health') return send(200, { status: 'ok' });
    if (path.startsWith('/api/') && (!this.apiKey || r.apiKey !== this.apiKey)) {
      return send(401, 'Unauthorized');
    }
    if (path === '/api/capabilities') {
      return send(200, { lark_cli_init_image: true, lark_cli_broker_image: false });
    }
    const one = /^\/api\/sandboxes\/([^/]+)$/.exec(path);
    const view = (id: string) => ({
      sandbox_id: id,
      sandbox_url: this.aioUrl,
      status: this.sandboxes.get(id)?.status,
    });
    if (r.method === 'POST' && path === '/api/sandboxes') {
      const id = String(r.body?.sandbox_id);
      this.sandboxes.set(id, { status: 'Running' });
      return send(200, view(id));
    }
    if (r.method === 'GET' && path === '/api/sandboxes') {
      return send(200, {
        sandboxes: [...this.sandboxes.keys()].map(view),
        count: this.sandboxes.size,
      });
    }
    if (one && r.method === 'GET') {
      const id = decodeURIComponent(one[1]!);
      if (!this.sandboxes.has(id)) return send(404, { detail: `Sandbox '${id}' not found` });
      return send(200, view(id));
    }
    if (one && r.method === 'DELETE') {
      const id = decodeURIComponent(one[1]!);
      this.sandboxes.delete(id);
      return send(200, { ok: true, sandbox_id: id });
    }
    send(404, { detail: 'Not Found' });
  }
}

let aio: StandinFixture;
let prov: ProvisionerStandin;
let backend: RemoteSandboxBackend;

beforeAll(async () => {
  aio = await startStandin();
});
afterAll(async () => {
  await aio.close();
});
beforeEach(async () => {
  prov = new ProvisionerStandin(aio.url, 'k-123');
  await prov.start();
  backend = new RemoteSandboxBackend({ provisionerUrl: `${prov.url}/`, apiKey: 'k-123' });
});
afterEach(async () => {
  await backend.close();
  await prov.stop();
});

const api = () => prov.received.filter((r) => r.path.startsWith('/api/'));

describe('RemoteSandboxBackend', () => {
  it('§9.4.52 §9.4.53 creates with exactly the documented body, the API key, and waits until ready', async () => {
    const info = await backend.create({ sandboxId: 'sb1', threadId: 't1', userId: 'alice' });
    expect(info).toMatchObject({ sandboxId: 'sb1', sandboxUrl: aio.url });
    expect(backend.usesThreadDataMounts).toBe(false);
    const [create] = api();
    expect(create?.apiKey).toBe('k-123');
    expect(create?.body).toEqual({
      sandbox_id: 'sb1',
      thread_id: 't1',
      user_id: 'alice',
      include_legacy_skills: false,
      provision_lark_cli_runtime: false,
      provision_lark_cli_broker: false,
    });
    expect(aio.calls('/v1/sandbox').length).toBeGreaterThan(0);
  });

  it('§9.4.56 §9.4.61 an anonymous create sends thread_id null and the default user', async () => {
    await backend.create({ sandboxId: 'anon' });
    expect(api()[0]?.body).toMatchObject({ thread_id: null, user_id: 'default' });
  });

  it('§9.4.54 forwards only allowlisted extra mounts, in order', async () => {
    await backend.create({
      sandboxId: 'm',
      threadId: 't',
      extraMounts: [
        { hostPath: '/h/ws', containerPath: '/mnt/user-data/workspace', readOnly: false },
        { hostPath: '/h/acp', containerPath: '/mnt/acp-workspace', readOnly: true },
        { hostPath: '/h/skills', containerPath: '/mnt/skills', readOnly: true },
        { hostPath: '/h/custom', containerPath: '/mnt/skills/custom', readOnly: true },
        { hostPath: '/h/cfg', containerPath: '/mnt/integrations/lark-cli/config', readOnly: true },
      ],
    });
    expect(api()[0]?.body?.extra_mounts).toEqual([
      { host_path: '/h/acp', container_path: '/mnt/acp-workspace', read_only: true },
      { host_path: '/h/custom', container_path: '/mnt/skills/custom', read_only: true },
      { host_path: '/h/cfg', container_path: '/mnt/integrations/lark-cli/config', read_only: true },
    ]);
  });

  it('§9.4.55 drops the runtime mount only when the provisioner provisions the runtime', async () => {
    const mounts = [
      { hostPath: '/h/cfg', containerPath: '/mnt/integrations/lark-cli/config', readOnly: true },
      { hostPath: '/h/data', containerPath: '/mnt/integrations/lark-cli/data', readOnly: false },
      { hostPath: '/h/rt', containerPath: '/mnt/integrations/lark-cli/runtime', readOnly: true },
    ];
    await backend.create({ sandboxId: 'a', extraMounts: mounts });
    await backend.create({ sandboxId: 'b', extraMounts: mounts, provisionLarkCliBroker: true });
    const paths = api()
      .filter((r) => r.method === 'POST')
      .map((r) =>
        (r.body?.extra_mounts as { container_path: string }[]).map((m) => m.container_path),
      );
    expect(paths[0]).toContain('/mnt/integrations/lark-cli/runtime');
    expect(paths[1]).toEqual([
      '/mnt/integrations/lark-cli/config',
      '/mnt/integrations/lark-cli/data',
    ]);
  });

  it('§9.4.57 a failed create is "Provisioner create failed"', async () => {
    prov.override = (r) =>
      r.method === 'POST' ? { status: 500, body: { detail: 'Pod creation failed' } } : undefined;
    await expect(backend.create({ sandboxId: 'x' })).rejects.toThrow(/Provisioner create failed/);
  });

  it('without the API key every /api call is refused and surfaces as an error', async () => {
    const keyless = new RemoteSandboxBackend({ provisionerUrl: prov.url });
    try {
      await expect(keyless.create({ sandboxId: 'x' })).rejects.toThrow(/HTTP 401/);
      expect(prov.received.at(-1)?.apiKey).toBeUndefined();
      expect(await keyless.healthy()).toBe(true);
    } finally {
      await keyless.close();
    }
  });

  it('§9.4.58 destroys with DELETE and swallows a failure (logged)', async () => {
    await backend.create({ sandboxId: 'd' });
    await backend.destroy({ sandboxId: 'd', sandboxUrl: aio.url, createdAt: 0 });
    expect(api().at(-1)).toMatchObject({ method: 'DELETE', path: '/api/sandboxes/d' });
    prov.override = () => ({ status: 500, body: { detail: 'Partial cleanup' } });
    await backend.destroy({ sandboxId: 'd', sandboxUrl: aio.url, createdAt: 0 });
  });

  // Divergence from §9.4.59 (Pending dead): a real cluster allocates the node port at once, so a
  // starting Pod is Pending with an address; it is starting, not dead.
  it('a Pending sandbox is waited for (bounded) and alive once Running', async () => {
    const info = { sandboxId: 'p', sandboxUrl: aio.url, createdAt: 0 };
    await backend.create({ sandboxId: 'p' });
    prov.sandboxes.set('p', { status: 'Pending' });
    const waiting = new RemoteSandboxBackend({
      provisionerUrl: prov.url,
      apiKey: 'k-123',
      startingWaitMs: 60_000,
      startingPollMs: 5,
    });
    let reads = 0;
    prov.override = (r) => {
      if (r.method === 'GET' && r.path === '/api/sandboxes/p' && ++reads === 3) {
        prov.sandboxes.set('p', { status: 'Running' });
      }
      return undefined;
    };
    expect(await waiting.checkHealth(info)).toBe('alive');
    expect(reads).toBeGreaterThanOrEqual(3);
    await waiting.close();
  });

  it('§9.4.59 health: Running alive, Pending starting (unknown, kept), 404 dead, other phases dead, failures unknown', async () => {
    const info = { sandboxId: 'h', sandboxUrl: aio.url, createdAt: 0 };
    await backend.create({ sandboxId: 'h' });
    expect(await backend.checkHealth(info)).toBe('alive');
    prov.sandboxes.set('h', { status: 'Pending' });
    expect(await backend.checkHealth(info)).toBe('unknown');
    prov.sandboxes.set('h', { status: 'Failed' });
    expect(await backend.checkHealth(info)).toBe('dead');
    prov.sandboxes.delete('h');
    expect(await backend.checkHealth(info)).toBe('dead');
    prov.override = () => ({ status: 503, body: 'unavailable' });
    expect(await backend.checkHealth(info)).toBe('unknown');
    const unreachable = new RemoteSandboxBackend({ provisionerUrl: 'http://127.0.0.1:1' });
    expect(await unreachable.checkHealth(info)).toBe('unknown');
    await unreachable.close();
  });

  it('§9.4.60 discover: 404 null, 200 info, failure null', async () => {
    expect(await backend.discover('nope')).toBeNull();
    await backend.create({ sandboxId: 'found' });
    expect(await backend.discover('found')).toMatchObject({
      sandboxId: 'found',
      sandboxUrl: aio.url,
    });
    prov.override = () => ({ status: 500, body: {} });
    expect(await backend.discover('found')).toBeNull();
  });

  it('§9.4.50 §9.4.51 lists through the provisioner, dropping malformed entries', async () => {
    await backend.create({ sandboxId: 'l1' });
    expect((await backend.listRunning()).map((i) => i.sandboxId)).toEqual(['l1']);
    prov.override = (r) =>
      r.path === '/api/sandboxes'
        ? {
            status: 200,
            body: {
              sandboxes: [
                { sandbox_id: 'ok', sandbox_url: 'http://x:1' },
                { sandbox_id: '', sandbox_url: 'http://x:2' },
                { sandbox_id: 'nourl' },
                'junk',
              ],
            },
          }
        : undefined;
    expect((await backend.listRunning()).map((i) => i.sandboxId)).toEqual(['ok']);
    for (const body of [[], { sandboxes: 'x' }, 'text']) {
      prov.override = () => ({ status: 200, body });
      expect(await backend.listRunning()).toEqual([]);
    }
    prov.override = () => ({ status: 500, body: {} });
    expect(await backend.listRunning()).toEqual([]);
  });

  it('reads the capabilities; a provisioner without the network fields enforces nothing', async () => {
    expect(await backend.capabilities()).toEqual({
      larkCliInitImage: true,
      larkCliBrokerImage: false,
      networkNone: false,
      egressProxy: false,
    });
    expect(await backend.networkSupport()).toEqual({
      none: false,
      filtered: false,
      credentials: false,
    });
  });

  it('reads network_none and egress_proxy, and advertises mode none only', async () => {
    prov.override = (r) =>
      r.path === '/api/capabilities'
        ? { status: 200, body: { network_none: true, egress_proxy: true } }
        : undefined;
    expect(await backend.capabilities()).toMatchObject({ networkNone: true, egressProxy: true });
    expect(await backend.networkSupport()).toEqual({
      none: true,
      filtered: false,
      credentials: false,
    });
  });

  it('refuses a capability flag that is not a boolean, never reading it as enforced', async () => {
    // Truthy non-booleans, built at run time so no literal check can match them.
    const odd: unknown[] = [JSON.parse('"true"'), Number('1'), JSON.parse('{}'), null];
    for (const field of ['network_none', 'egress_proxy', 'lark_cli_init_image']) {
      for (const value of odd) {
        prov.override = (r) =>
          r.path === '/api/capabilities' ? { status: 200, body: { [field]: value } } : undefined;
        const err = await backend.capabilities().catch((e: unknown) => e);
        expect(isSbxError(err) && err.code, `${field}=${JSON.stringify(value)}`).toBe(
          SandboxRuntimeError.CODE,
        );
        await expect(backend.networkSupport()).rejects.toThrow(/capabilities/);
      }
    }
    prov.override = (r) =>
      r.path === '/api/capabilities' ? { status: 200, body: [true] } : undefined;
    await expect(backend.capabilities()).rejects.toThrow(/not a JSON object/);
  });

  it('sends network_mode none for a mode none sandbox, nothing for open egress', async () => {
    await backend.create({ sandboxId: 'n1', network: parseNetworkPolicy({ mode: 'none' }) });
    await backend.create({ sandboxId: 'o1', network: parseNetworkPolicy({ mode: 'open' }) });
    await backend.create({ sandboxId: 'u1' });
    const bodies = api()
      .filter((r) => r.method === 'POST')
      .map((r) => r.body);
    expect(bodies[0]).toMatchObject({ sandbox_id: 'n1', network_mode: 'none' });
    expect(bodies[1]).not.toHaveProperty('network_mode');
    expect(bodies[2]).not.toHaveProperty('network_mode');
  });

  it('never creates a sandbox whose restricting policy the provisioner cannot enforce', async () => {
    const policies = [
      parseNetworkPolicy({ mode: 'allowlist', allow: ['example.com:443'] }),
      parseNetworkPolicy({ mode: 'open', deny: ['*.example.com'] }),
    ];
    for (const network of policies) {
      const err = await backend.create({ sandboxId: 'x1', network }).catch((e: unknown) => e);
      expect(isSbxError(err) && err.code).toBe('NETWORK_POLICY_UNENFORCEABLE');
    }
    expect(api().filter((r) => r.method === 'POST')).toEqual([]);
  });

  it('sends a non-default skills root and derives the category allowlist from it', async () => {
    const custom = new RemoteSandboxBackend({
      provisionerUrl: prov.url,
      apiKey: 'k-123',
      skillsRoot: '/opt/skills/',
    });
    try {
      await custom.create({
        sandboxId: 'sr',
        extraMounts: [
          { hostPath: '/h/pub', containerPath: '/opt/skills/public', readOnly: true },
          { hostPath: '/h/old', containerPath: '/mnt/skills/public', readOnly: true },
        ],
      });
      const body = api().at(-1)?.body;
      expect(body?.skills_container_path).toBe('/opt/skills');
      expect(body?.extra_mounts).toEqual([
        { host_path: '/h/pub', container_path: '/opt/skills/public', read_only: true },
      ]);
    } finally {
      await custom.close();
    }
  });
});

describe('provisioner mount rules', () => {
  it('§9.5.62 the allowlist holds the ACP workspace, the four categories and the Lark CLI paths', () => {
    expect(provisionerExtraMountPaths()).toEqual([
      '/mnt/acp-workspace',
      '/mnt/skills/public',
      '/mnt/skills/custom',
      '/mnt/skills/legacy',
      '/mnt/skills/integrations',
      '/mnt/integrations/lark-cli/config',
      '/mnt/integrations/lark-cli/config/locks',
      '/mnt/integrations/lark-cli/data',
      '/mnt/integrations/lark-cli/runtime',
    ]);
    expect(PROVISIONER_MAX_EXTRA_MOUNTS).toBe(10);
  });

  it.each([
    'skills',
    '/',
    '/a/../b',
    '/mnt//skills',
    '/mnt/user-data',
    '/mnt/user-data/skills',
    '/mnt',
    '/mnt/integrations/x',
  ])('§5.5 refuses the skills root %s', (root) => {
    let caught: unknown;
    try {
      canonicalSkillsRoot(root);
    } catch (err) {
      caught = err;
    }
    expect(isSbxError(caught) && caught.code).toBe('INVALID_ARGUMENT');
  });

  it('§5.5 accepts a canonical root and strips a trailing slash', () => {
    expect(canonicalSkillsRoot('/mnt/skills/')).toBe('/mnt/skills');
    expect(canonicalSkillsRoot('/opt/agent-skills')).toBe('/opt/agent-skills');
  });
});
