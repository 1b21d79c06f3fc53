import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectKubeApi } from './kube-api.js';
import type { KubeApi } from './kube-api.js';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import type { ProvisionerSettings } from './provisioner-settings.js';
import { startProvisioner } from './provisioner-server.js';
import type { RunningProvisioner } from './provisioner-server.js';
import { sandboxPod, sandboxService } from './sandbox-objects.js';
import { parseCreateRequest } from './create-request.js';
import { KubeStandin } from './testing/kube-standin.js';

// The provisioner over HTTP, talking through the real @kubernetes/client-node to the local
// Kubernetes API stand-in (its fake kubelet runs each Pod as a local server).

const KEY = 'test-key';
let dir: string;
let standin: KubeStandin;
let kube: KubeApi;
let provisioner: RunningProvisioner | undefined;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sbx-prov-'));
  standin = await KubeStandin.start();
  kube = await connectKubeApi({ kubeconfigPath: await standin.writeKubeconfig(dir), waitMs: 0 });
});
afterEach(async () => {
  await provisioner?.close();
  provisioner = undefined;
  await standin.close();
  await rm(dir, { recursive: true, force: true });
});

function settingsWith(env: Record<string, string> = {}): ProvisionerSettings {
  return resolveProvisionerSettings({
    env: {
      PROVISIONER_API_KEY: KEY,
      NODE_HOST: '127.0.0.1',
      PROVISIONER_PORT: '0',
      K8S_NAMESPACE: 'sbx-test',
      SANDBOX_DELETE_TIMEOUT_SECONDS: '2',
      SANDBOX_GC_INTERVAL_SECONDS: '0',
      ...env,
    },
  });
}

async function start(env: Record<string, string> = {}, urlPolls = 20): Promise<RunningProvisioner> {
  provisioner = await startProvisioner({
    settings: settingsWith(env),
    kube,
    urlPolls,
    pollIntervalMs: 10,
  });
  return provisioner;
}

/** `key: null` sends no key header. */
async function call(method: string, route: string, body?: unknown, key: string | null = KEY) {
  const res = await fetch(`${provisioner!.url}${route}`, {
    method,
    headers: {
      ...(key === null ? {} : { 'x-api-key': key }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, body: json as Record<string, unknown> };
}

/** A POST of `size` bytes sent in chunks, with no content-length; resolves the status. */
function chunkedPost(route: string, size: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${provisioner!.url}${route}`, {
      method: 'POST',
      headers: {
        'x-api-key': KEY,
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
      },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    const chunk = 'x'.repeat(4096);
    for (let sent = 0; sent < size; sent += chunk.length) req.write(chunk);
    req.end();
  });
}

const create = (id: string, extra: Record<string, unknown> = {}) =>
  call('POST', '/api/sandboxes', {
    sandbox_id: id,
    thread_id: `thread-${id}`,
    user_id: 'u1',
    ...extra,
  });

describe('provisioner API against the Kubernetes stand-in', () => {
  it('ensures the namespace at start-up, with the component labels', async () => {
    await start();
    expect(standin.namespaces()).toEqual(['sbx-test']);
  });

  it('§9.5.74 a new create makes exactly one Pod and one Service and answers a reachable URL', async () => {
    await start();
    const res = await create('abc123');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ sandbox_id: 'abc123', status: 'Running' });
    expect(standin.calls('create', 'pods')).toHaveLength(1);
    expect(standin.calls('create', 'services')).toHaveLength(1);
    const ready = await fetch(`${String(res.body.sandbox_url)}/v1/sandbox`);
    expect(ready.status).toBe(200);
  });

  it('the fast path: a create that finds the Service’s URL creates nothing', async () => {
    await start();
    const first = await create('abc123');
    const again = await create('abc123');
    expect(again.body).toEqual(first.body);
    expect(standin.calls('create', 'pods')).toHaveLength(1);
  });

  it('concurrent creates of one id in one provisioner share one attempt', async () => {
    await start();
    const results = await Promise.all([create('same1'), create('same1'), create('same1')]);
    expect(new Set(results.map((r) => r.body.sandbox_url)).size).toBe(1);
    expect(standin.calls('create', 'pods')).toHaveLength(1);
  });

  it('409 on the Pod (a retry after a crash, another replica) is tolerated', async () => {
    const p = await start();
    standin.seed('pod', sandboxPod(p.settings, parseCreateRequest({ sandbox_id: 'half1' })));
    const res = await create('half1');
    expect(res.status).toBe(200);
    expect(standin.calls('create', 'pods').map((c) => c.status)).toEqual([409]);
    expect(standin.pods('sbx-test')).toHaveLength(1);
  });

  it('409 on the Service is tolerated too', async () => {
    const p = await start();
    standin.seed('service', sandboxService(p.settings, 'half2'));
    const res = await create('half2');
    expect(res.status).toBe(200);
    expect(standin.services('sbx-test')).toHaveLength(1);
  });

  it('a Pod the API refuses is a 500 "Pod creation failed" and leaves nothing', async () => {
    await start();
    standin.fail({ verb: 'create', resource: 'pods', status: 422 });
    const res = await create('bad1');
    expect(res.status).toBe(500);
    expect(String(res.body.detail)).toMatch(/^Pod creation failed: Invalid/);
    expect(standin.pods()).toEqual([]);
    expect(standin.calls('create', 'services')).toEqual([]);
  });

  it('a Service failure deletes the Pod and answers 500 "Service creation failed"', async () => {
    await start();
    standin.fail({ verb: 'create', resource: 'services', status: 403 });
    const res = await create('svc1');
    expect(res.status).toBe(500);
    expect(String(res.body.detail)).toMatch(/^Service creation failed/);
    expect(standin.calls('delete', 'pods')).toHaveLength(1);
    await expect.poll(() => standin.pods().length, { timeout: 60_000 }).toBe(0);
  });

  it('transient 503 / 429 answers to a create call are retried', async () => {
    await start();
    standin.fail({ verb: 'create', resource: 'pods', status: 503 });
    standin.fail({ verb: 'create', resource: 'services', status: 429 });
    const res = await create('flaky1');
    expect(res.status).toBe(200);
    expect(standin.calls('create', 'pods').map((c) => c.status)).toEqual([503, 201]);
    expect(standin.calls('create', 'services').map((c) => c.status)).toEqual([429, 201]);
  });

  it('§9.5.76 transient Service read errors (503, 429) pass: the URL comes on the third read', async () => {
    await start();
    // The fast-path read (404) is not one of the three.
    standin.fail({ verb: 'read', resource: 'services', status: 404 });
    standin.fail({ verb: 'read', resource: 'services', status: 503 });
    standin.fail({ verb: 'read', resource: 'services', status: 429 });
    const res = await create('poll1');
    expect(res.status).toBe(200);
    expect(String(res.body.sandbox_url)).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(standin.calls('read', 'services').map((c) => c.status)).toEqual([404, 503, 429, 200]);
  });

  it('a refusal of the credentials while waiting is not retried', async () => {
    await start();
    standin.fail({ verb: 'read', resource: 'services', status: 404 });
    standin.fail({ verb: 'read', resource: 'services', status: 401 });
    const res = await create('auth1');
    expect(res.status).toBe(500);
    expect(standin.calls('read', 'services')).toHaveLength(2);
  });

  it('an access URL that never appears is a 500 after the bounded wait', async () => {
    await start({}, 5);
    standin.pauseKubelet();
    const res = await create('slow1');
    expect(res.status).toBe(500);
    expect(res.body.detail).toBe('Service access URL was not available in time');
    expect(standin.calls('read', 'services')).toHaveLength(1 + 5);
  });

  it('§9.5.77 ClusterIP answers the Service’s cluster DNS name', async () => {
    await start({ SANDBOX_SERVICE_TYPE: 'ClusterIP', K8S_NAMESPACE: 'mdv-sit' });
    const res = await create('abc123');
    expect(res.body.sandbox_url).toBe('http://sandbox-abc123-svc.mdv-sit.svc.cluster.local:8080');
    expect(standin.services('mdv-sit')[0]!.spec!.type).toBe('ClusterIP');
  });

  it('GET answers the sandbox, 404 with the reference’s detail when there is none', async () => {
    await start();
    await create('abc123');
    expect((await call('GET', '/api/sandboxes/abc123')).body).toMatchObject({
      sandbox_id: 'abc123',
      status: 'Running',
    });
    const missing = await call('GET', '/api/sandboxes/nope1');
    expect(missing).toEqual({ status: 404, body: { detail: "Sandbox 'nope1' not found" } });
    expect((await call('GET', '/api/sandboxes/..%2Fetc')).status).toBe(404);
  });

  it('a Pod with no Service URL yet answers its phase as status; NotFound when the Pod is gone', async () => {
    const p = await start();
    standin.pauseKubelet();
    standin.seed('service', { ...sandboxService(p.settings, 'pend1') });
    expect((await call('GET', '/api/sandboxes/pend1')).status).toBe(404); // no URL without a running Pod
    await start({ SANDBOX_SERVICE_TYPE: 'ClusterIP' });
    expect((await call('GET', '/api/sandboxes/pend1')).body).toMatchObject({ status: 'NotFound' });
  });

  it('lists the sandboxes with URLs, with phases from one Pod list', async () => {
    await start();
    await create('one1');
    await create('two2');
    const res = await call('GET', '/api/sandboxes');
    expect(res.body.count).toBe(2);
    expect(
      (res.body.sandboxes as { sandbox_id: string }[]).map((s) => s.sandbox_id).sort(),
    ).toEqual(['one1', 'two2']);
    expect(standin.calls('read', 'pods')).toHaveLength(2); // the two creates' phase reads, none for the list
  });

  it('delete removes both objects and waits for the Pod to be gone', async () => {
    await start();
    await create('del1');
    const res = await call('DELETE', '/api/sandboxes/del1');
    expect(res).toEqual({ status: 200, body: { ok: true, sandbox_id: 'del1', terminated: true } });
    expect(standin.pods()).toEqual([]);
    expect(standin.services()).toEqual([]);
    // Deleting again is fine (404s are tolerated).
    expect((await call('DELETE', '/api/sandboxes/del1')).status).toBe(200);
  });

  it('a Pod still terminating at the end of the bounded wait is reported, not waited for forever', async () => {
    await start({ SANDBOX_DELETE_TIMEOUT_SECONDS: '1' });
    await create('term1');
    standin.holdTerminations();
    const res = await call('DELETE', '/api/sandboxes/term1');
    expect(res.body).toEqual({ ok: true, sandbox_id: 'term1', terminated: false });
    standin.releaseTerminations();
  });

  it('a non-404 delete failure is a 500 "Partial cleanup" that still deletes the rest', async () => {
    await start();
    await create('part1');
    standin.fail({ verb: 'delete', resource: 'services', status: 403 });
    const res = await call('DELETE', '/api/sandboxes/part1');
    expect(res.status).toBe(500);
    expect(String(res.body.detail)).toMatch(/^Partial cleanup: service: Forbidden/);
    expect(standin.calls('delete', 'pods')).toHaveLength(1);
  });

  it('collects a Pod whose Service is gone and a Service whose Pod is gone, after the grace only', async () => {
    const p = await start();
    standin.seed(
      'pod',
      sandboxPod(p.settings, parseCreateRequest({ sandbox_id: 'orphanpod' })),
      600,
    );
    standin.seed('service', sandboxService(p.settings, 'orphansvc'), 600);
    standin.seed('pod', sandboxPod(p.settings, parseCreateRequest({ sandbox_id: 'young' })), 1);
    await create('whole1');
    expect(await p.pods.collectGarbage()).toEqual({ pods: ['orphanpod'], services: ['orphansvc'] });
    await expect
      .poll(() =>
        standin
          .pods()
          .map((x) => x.metadata!.name)
          .sort(),
      )
      .toEqual(['sandbox-whole1', 'sandbox-young']);
    expect(standin.services().map((s) => s.metadata!.name)).toEqual(['sandbox-whole1-svc']);
  });
});

describe('garbage collection never races a create or a delete', () => {
  it('leaves a lone Pod alone while this provisioner is creating its Service', async () => {
    const p = await start();
    standin.seed('pod', sandboxPod(p.settings, parseCreateRequest({ sandbox_id: 'busy1' })), 600);
    standin.fail({ verb: 'create', resource: 'services', status: 503 });
    const creating = create('busy1');
    // The Service create was refused once; the retry waits its back-off: the Pod is alone now.
    await expect
      .poll(() => standin.calls('create', 'services').length, { timeout: 60_000 })
      .toBe(1);
    expect(await p.pods.collectGarbage()).toEqual({ pods: [], services: [] });
    expect((await creating).status).toBe(200);
  });

  it('does not delete again a Pod that is already terminating', async () => {
    const p = await start();
    standin.seed('pod', sandboxPod(p.settings, parseCreateRequest({ sandbox_id: 'going1' })), 600);
    standin.holdTerminations();
    await kube.deletePod('sbx-test', 'sandbox-going1');
    expect(await p.pods.collectGarbage()).toEqual({ pods: [], services: [] });
    expect(standin.calls('delete', 'pods')).toHaveLength(1);
    standin.releaseTerminations();
  });
});

describe('provisioner HTTP surface', () => {
  it('§9.5.78 /health is open; /api/* needs the key; a wrong or missing key is 401 Unauthorized', async () => {
    await start();
    expect(await call('GET', '/health', undefined, null)).toEqual({
      status: 200,
      body: { status: 'ok' },
    });
    expect(await call('GET', '/api/sandboxes', undefined, null)).toEqual({
      status: 401,
      body: 'Unauthorized',
    });
    expect((await call('GET', '/api/sandboxes', undefined, 'wrong')).status).toBe(401);
    expect((await call('GET', '/api/sandboxes', undefined, `${KEY}x`)).status).toBe(401);
    expect((await call('GET', '/api/sandboxes')).status).toBe(200);
  });

  it('§9.5.78 with no key configured every /api/* request is refused', async () => {
    await start({ PROVISIONER_API_KEY: '' });
    expect((await call('GET', '/api/capabilities', undefined, '')).status).toBe(401);
    expect((await call('GET', '/api/sandboxes', undefined, 'anything')).status).toBe(401);
    expect((await call('GET', '/health', undefined, null)).status).toBe(200);
  });

  it('capabilities say which Lark CLI images are configured', async () => {
    await start({ LARK_CLI_BROKER_IMAGE: 'broker:1' });
    expect((await call('GET', '/api/capabilities')).body).toEqual({
      lark_cli_init_image: false,
      lark_cli_broker_image: true,
      network_none: true,
      egress_proxy: false,
    });
  });

  it('bad bodies get clear 4xx answers and create nothing', async () => {
    await start();
    expect((await call('POST', '/api/sandboxes', '{not json')).status).toBe(422);
    const invalid = await call('POST', '/api/sandboxes', {
      sandbox_id: 'Bad_Id',
      thread_id: '../x',
    });
    expect(invalid.status).toBe(422);
    expect(JSON.stringify(invalid.body.detail)).toContain('thread_id');
    const mount = await create('m1', {
      extra_mounts: [{ host_path: '/etc', container_path: '/mnt/acp-workspace' }],
    });
    expect(mount.status).toBe(400);
    expect(String(mount.body.detail)).toContain('not under the host base');
    const huge = await call('POST', '/api/sandboxes', {
      sandbox_id: 'h1',
      pad: 'x'.repeat(70_000),
    });
    expect(huge.status).toBe(413);
    // Without a content-length (chunked), the body is cut off as it arrives.
    expect(await chunkedPost('/api/sandboxes', 70_000)).toBe(413);
    expect([...standin.calls('create', 'pods'), ...standin.calls('create', 'services')]).toEqual(
      [],
    );
  });

  it('attack: two users with one thread id get two user-data directories on the node', async () => {
    await start({ THREADS_HOST_PATH: '/var/lib/sbx/threads' });
    const a = await call('POST', '/api/sandboxes', {
      sandbox_id: 'ua1',
      thread_id: 'shared-thread',
      user_id: 'alice',
    });
    const b = await call('POST', '/api/sandboxes', {
      sandbox_id: 'ub1',
      thread_id: 'shared-thread',
      user_id: 'bob',
    });
    expect([a.status, b.status]).toEqual([200, 200]);
    const userData = (name: string) =>
      standin
        .pods('sbx-test')
        .find((p) => p.metadata!.name === name)!
        .spec!.volumes!.find((v) => v.name === 'user-data')!.hostPath!.path;
    expect(userData('sandbox-ua1')).toBe(
      '/var/lib/sbx/users/alice/threads/shared-thread/user-data',
    );
    expect(userData('sandbox-ub1')).toBe('/var/lib/sbx/users/bob/threads/shared-thread/user-data');
  });

  it('attack: a parent of every tenant’s user data is refused as an extra mount, 400, nothing created', async () => {
    await start({ THREADS_HOST_PATH: '/var/lib/sbx/threads' });
    for (const host_path of [
      '/var/lib/sbx/threads',
      '/var/lib/sbx/threads/',
      '/var/lib/sbx//threads',
      '/var/lib/sbx/x/../threads',
      '/var/lib/sbx/users',
      '/var/lib/sbx/users/u1',
    ]) {
      const refused = await create('p1', {
        extra_mounts: [{ host_path, container_path: '/mnt/acp-workspace', read_only: false }],
      });
      expect(refused.status, host_path).toBe(400);
    }
    expect([...standin.calls('create', 'pods'), ...standin.calls('create', 'services')]).toEqual(
      [],
    );
  });

  it('unknown routes are 404 and wrong methods 405', async () => {
    await start();
    expect((await call('GET', '/api/nothing')).status).toBe(404);
    expect((await call('PUT', '/api/sandboxes')).status).toBe(405);
    expect((await call('POST', '/api/sandboxes/x1')).status).toBe(405);
    expect((await call('POST', '/health', {}, null)).status).toBe(405);
  });
});
