import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectKubeApi } from './kube-api.js';
import type { KubeApi } from './kube-api.js';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import { startProvisioner } from './provisioner-server.js';
import type { RunningProvisioner } from './provisioner-server.js';
import { KubeStandin } from './testing/kube-standin.js';
import type { KubeStandinOptions } from './testing/kube-standin.js';

// A create that meets a Pod or Service being deleted (409 on an object with a deletionTimestamp)
// must never hand out that object's URL: it waits, bounded, for it to go and creates afresh, or
// answers 503 with Retry-After. And a Pod that is Pending behind an allocated node port is
// reported as Pending, with its URL.

const KEY = 'k';
const NS = 'term';
let dir: string;
let standin: KubeStandin;
let kube: KubeApi;
let provisioner: RunningProvisioner;

async function start(
  env: Record<string, string> = {},
  options: KubeStandinOptions = {},
): Promise<void> {
  dir = await mkdtemp(path.join(tmpdir(), 'sbx-term-'));
  standin = await KubeStandin.start(options);
  kube = await connectKubeApi({ kubeconfigPath: await standin.writeKubeconfig(dir), waitMs: 0 });
  provisioner = await startProvisioner({
    settings: resolveProvisionerSettings({
      env: {
        PROVISIONER_API_KEY: KEY,
        NODE_HOST: '127.0.0.1',
        PROVISIONER_PORT: '0',
        K8S_NAMESPACE: NS,
        SBX_HOST_BASE_DIR: '/srv/sbx',
        SANDBOX_GC_INTERVAL_SECONDS: '0',
        SANDBOX_DELETE_TIMEOUT_SECONDS: '0',
        ...env,
      },
    }),
    kube,
    pollIntervalMs: 10,
  });
}

afterEach(async () => {
  standin.releaseTerminations();
  await provisioner.close();
  await standin.close();
  await rm(dir, { recursive: true, force: true });
});

async function call(method: string, route: string, body?: unknown) {
  const res = await fetch(`${provisioner.url}${route}`, {
    method,
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as Record<string, unknown>,
  };
}

const uidOf = (name: string) =>
  standin.pods(NS).find((p) => p.metadata?.name === name && !p.metadata.deletionTimestamp)?.metadata
    ?.uid;

describe('a create that meets an object being deleted', () => {
  it('attack: a Pod being deleted (its Service still there) is waited out, then made afresh; its URL is never answered', async () => {
    // Node ports assigned at once, as a cluster does: the terminating Pod's Service has a URL.
    await start({}, { nodePorts: 'immediate' });
    const first = await call('POST', '/api/sandboxes', { sandbox_id: 'gone' });
    expect(first.status).toBe(200);
    const oldUid = uidOf('sandbox-gone');
    standin.holdTerminations(); // a node that is down: the Pod stays terminating
    await kube.deletePod(NS, 'sandbox-gone');

    const from = standin.requests.length;
    const again = call('POST', '/api/sandboxes', { sandbox_id: 'gone' });
    const conflict = () =>
      standin.requests.findIndex(
        (r, i) => i >= from && r.verb === 'create' && r.resource === 'pods' && r.status === 409,
      );
    await standin.nextCall((r) => r.verb === 'create' && r.status === 409, from);
    // Released only once the provisioner has seen the terminating Pod after its 409.
    await standin.nextCall((r) => r.verb === 'read' && r.resource === 'pods', conflict() + 1);
    standin.releaseTerminations();
    const answer = await again;
    expect(answer.status).toBe(200);
    const newUid = uidOf('sandbox-gone');
    expect(newUid).toBeDefined();
    expect(newUid).not.toBe(oldUid);
    expect(standin.pods(NS)).toHaveLength(1);
    const reached = await fetch(`${answer.body.sandbox_url as string}/v1/sandbox`);
    expect(reached.status).toBe(200);
  }, 30_000);

  it('attack: a Pod that stays terminating past the bound is a 503 with Retry-After, nothing handed out', async () => {
    await start({ SANDBOX_TERMINATING_WAIT_SECONDS: '1' });
    await call('POST', '/api/sandboxes', { sandbox_id: 'stuck' });
    standin.holdTerminations();
    await kube.deletePod(NS, 'sandbox-stuck');
    const answer = await call('POST', '/api/sandboxes', { sandbox_id: 'stuck' });
    expect(answer.status).toBe(503);
    expect(answer.retryAfter).toBe('5');
    expect(String(answer.body.detail)).toMatch(/Pod sandbox-stuck is still being deleted/);
    expect(answer.body.sandbox_url).toBeUndefined();
  });

  it('attack: a Service being deleted is waited out and made afresh', async () => {
    await start();
    await call('POST', '/api/sandboxes', { sandbox_id: 'svc' });
    standin.holdTerminations();
    await kube.deleteService(NS, 'sandbox-svc-svc');
    const again = call('POST', '/api/sandboxes', { sandbox_id: 'svc' });
    await standin.nextCall(
      (r) => r.verb === 'create' && r.resource === 'services' && r.status === 409,
    );
    standin.releaseTerminations();
    const answer = await again;
    expect(answer.status).toBe(200);
    expect(standin.services(NS).filter((s) => !s.metadata?.deletionTimestamp)).toHaveLength(1);
  });

  it('a Service that stays terminating is a 503 with Retry-After; the live Pod is kept for the retry', async () => {
    await start({ SANDBOX_TERMINATING_WAIT_SECONDS: '0' });
    await call('POST', '/api/sandboxes', { sandbox_id: 'svc2' });
    standin.holdTerminations();
    await kube.deleteService(NS, 'sandbox-svc2-svc');
    const answer = await call('POST', '/api/sandboxes', { sandbox_id: 'svc2' });
    expect(answer.status).toBe(503);
    expect(answer.retryAfter).toBe('5');
    expect(standin.pods(NS)).toHaveLength(1);
  });

  it('GET and the list never answer the URL of a sandbox being deleted', async () => {
    await start();
    await call('POST', '/api/sandboxes', { sandbox_id: 'dying' });
    await call('POST', '/api/sandboxes', { sandbox_id: 'alive' });
    standin.holdTerminations();
    await kube.deletePod(NS, 'sandbox-dying');
    expect((await call('GET', '/api/sandboxes/dying')).status).toBe(404);
    const list = await call('GET', '/api/sandboxes');
    expect((list.body.sandboxes as { sandbox_id: string }[]).map((s) => s.sandbox_id)).toEqual([
      'alive',
    ]);
  });
});

describe('a Pending Pod behind an allocated node port (as a real cluster assigns one at once)', () => {
  it('the create answers its URL with status Pending, and the URL answers once the Pod runs', async () => {
    await start({}, { nodePorts: 'immediate' });
    standin.pauseKubelet();
    const answer = await call('POST', '/api/sandboxes', { sandbox_id: 'slow' });
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe('Pending');
    const url = answer.body.sandbox_url as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await expect(fetch(`${url}/v1/sandbox`)).rejects.toThrow();
    standin.resumeKubelet();
    await expect
      .poll(async () => (await call('GET', '/api/sandboxes/slow')).body.status, { timeout: 15_000 })
      .toBe('Running');
    expect((await fetch(`${url}/v1/sandbox`)).status).toBe(200);
  });
});
