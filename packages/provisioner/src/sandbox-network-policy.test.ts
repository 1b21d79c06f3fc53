import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseCreateRequest } from './create-request.js';
import { connectKubeApi } from './kube-api.js';
import type { KubeApi } from './kube-api.js';
import type { Service } from './kube-objects.js';
import { KubeApiError, ProvisionerHttpError } from './provisioner-errors.js';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import { startProvisioner } from './provisioner-server.js';
import type { RunningProvisioner } from './provisioner-server.js';
import { KubeStandin } from './testing/kube-standin.js';

// The per-sandbox NetworkPolicy, through the provisioner's HTTP API and the real
// @kubernetes/client-node, against the Kubernetes stand-in (which validates NetworkPolicies as
// the API server does).

const KEY = 'test-key';
const NS = 'sbx-net';
const PROXY_LABELS = {
  'app.kubernetes.io/name': 'sbx',
  'app.kubernetes.io/component': 'egress-proxy',
};
let dir: string;
let standin: KubeStandin;
let kube: KubeApi;
let provisioner: RunningProvisioner | undefined;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sbx-netpol-'));
  standin = await KubeStandin.start();
  kube = await connectKubeApi({ kubeconfigPath: await standin.writeKubeconfig(dir), waitMs: 0 });
});
afterEach(async () => {
  await provisioner?.close();
  provisioner = undefined;
  await standin.close();
  await rm(dir, { recursive: true, force: true });
});

async function start(env: Record<string, string> = {}): Promise<RunningProvisioner> {
  provisioner = await startProvisioner({
    settings: resolveProvisionerSettings({
      env: {
        PROVISIONER_API_KEY: KEY,
        NODE_HOST: '127.0.0.1',
        PROVISIONER_PORT: '0',
        K8S_NAMESPACE: NS,
        SANDBOX_DELETE_TIMEOUT_SECONDS: '2',
        SANDBOX_GC_INTERVAL_SECONDS: '0',
        ...env,
      },
    }),
    kube,
    urlPolls: 40,
    pollIntervalMs: 10,
  });
  return provisioner;
}

/** The proxy's Service as deploy/kubernetes makes it (a cluster IP, a selector, a named port). */
function proxyService(overrides: Partial<NonNullable<Service['spec']>> = {}): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'sbx-egress-proxy', namespace: NS, labels: { ...PROXY_LABELS } },
    spec: {
      type: 'ClusterIP',
      clusterIP: '10.96.7.42',
      selector: { ...PROXY_LABELS },
      ports: [{ name: 'proxy', port: 3128, targetPort: 'proxy', protocol: 'TCP' }],
      ...overrides,
    },
  };
}

async function call(method: string, route: string, body?: unknown) {
  const res = await fetch(`${provisioner!.url}${route}`, {
    method,
    headers: {
      'x-api-key': KEY,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const policyOf = (id: string) =>
  standin.networkPolicies(NS).find((p) => p.metadata?.name === `sandbox-${id}-egress`);
const podOf = (id: string) => standin.pods(NS).find((p) => p.metadata?.name === `sandbox-${id}`);

describe('with SANDBOX_EGRESS_PROXY', () => {
  it('a sandbox may reach the proxy Pods on their port and nothing else, and is pointed at the proxy', async () => {
    await start({ SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128' });
    standin.seed('service', proxyService());
    expect((await call('POST', '/api/sandboxes', { sandbox_id: 'n1' })).status).toBe(200);

    const policy = policyOf('n1')!;
    expect(policy.spec.podSelector).toEqual({ matchLabels: { 'sandbox-id': 'n1' } });
    expect(policy.spec.policyTypes).toEqual(['Egress']);
    // One rule: the proxy's Pods (this namespace: no namespaceSelector), its port, TCP. No DNS,
    // no ipBlock.
    expect(policy.spec.egress).toEqual([
      {
        to: [{ podSelector: { matchLabels: PROXY_LABELS } }],
        ports: [{ protocol: 'TCP', port: 'proxy' }],
      },
    ]);
    const proxyUrl = 'http://10.96.7.42:3128';
    for (const c of podOf('n1')!.spec!.containers) {
      const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
      expect(env).toMatchObject({
        HTTP_PROXY: proxyUrl,
        HTTPS_PROXY: proxyUrl,
        http_proxy: proxyUrl,
        https_proxy: proxyUrl,
        NO_PROXY: 'localhost,127.0.0.1,::1',
      });
    }
    // The policy exists before the Pod does: the Pod never runs unrestricted.
    const creates = standin.calls('create').map((r) => r.resource);
    expect(creates.indexOf('networkpolicies')).toBeLessThan(creates.indexOf('pods'));
  });

  it('network_mode none: a NetworkPolicy that allows no egress at all, and no proxy settings', async () => {
    await start({ SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128' });
    standin.seed('service', proxyService());
    const res = await call('POST', '/api/sandboxes', { sandbox_id: 'n2', network_mode: 'none' });
    expect(res.status).toBe(200);
    const policy = policyOf('n2')!;
    expect(policy.spec.policyTypes).toEqual(['Egress']);
    // The server returns an empty rule list absent: no rule, no egress.
    expect(policy.spec.egress ?? []).toEqual([]);
    for (const c of podOf('n2')!.spec!.containers)
      expect((c.env ?? []).some((e) => /proxy/i.test(e.name))).toBe(false);
  });

  it('the NetworkPolicy is deleted with the sandbox', async () => {
    await start({ SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128' });
    standin.seed('service', proxyService());
    expect((await call('POST', '/api/sandboxes', { sandbox_id: 'n3' })).status).toBe(200);
    expect(policyOf('n3')).toBeDefined();
    expect((await call('DELETE', '/api/sandboxes/n3')).status).toBe(200);
    expect(policyOf('n3')).toBeUndefined();
    expect(standin.calls('delete', 'networkpolicies').map((r) => r.name)).toEqual([
      'sandbox-n3-egress',
    ]);
  });

  it('a NetworkPolicy the API server refuses (422) is a typed error, and no Pod is made', async () => {
    await start({ SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128' });
    // A port name no server accepts in a NetworkPolicy (longer than an IANA service name),
    // built at run time: the provisioner copies the Service's targetPort as it is.
    const longName = ['proxy', 'port', 'name', 'too', 'long'].join('-');
    standin.seed(
      'service',
      proxyService({ ports: [{ name: 'proxy', port: 3128, targetPort: longName }] }),
    );
    const err = await provisioner!.pods.create(parseCreateRequest({ sandbox_id: 'n4' })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProvisionerHttpError);
    expect((err as ProvisionerHttpError).status).toBe(500);
    expect((err as ProvisionerHttpError).message).toMatch(
      /^NetworkPolicy creation failed: Invalid: .*spec\.egress\[0\]\.ports\[0\]\.port/,
    );
    const cause = (err as Error).cause;
    expect(cause).toBeInstanceOf(KubeApiError);
    expect((cause as KubeApiError).status).toBe(422);
    expect((cause as KubeApiError).reason).toBe('Invalid');
    expect(podOf('n4')).toBeUndefined();
    expect(standin.calls('create', 'pods')).toEqual([]);
  });

  it('a proxy Service that is missing, headless or without a selector: 503, nothing made', async () => {
    await start({ SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128' });
    const missing = await call('POST', '/api/sandboxes', { sandbox_id: 'n5' });
    expect(missing.status).toBe(503);
    expect(String(missing.body.detail)).toMatch(/sbx-egress-proxy.*not found/);
    standin.seed('service', proxyService({ clusterIP: ['No', 'ne'].join('') }));
    const headless = await call('POST', '/api/sandboxes', { sandbox_id: 'n5' });
    expect(headless.status).toBe(503);
    expect(String(headless.body.detail)).toMatch(/no cluster IP/);
    await kube.deleteService(NS, 'sbx-egress-proxy');
    standin.seed('service', proxyService({ selector: {} }));
    const unselected = await call('POST', '/api/sandboxes', { sandbox_id: 'n5' });
    expect(unselected.status).toBe(503);
    expect(String(unselected.body.detail)).toMatch(/no selector/);
    expect(standin.calls('create').filter((r) => r.resource !== 'namespaces')).toEqual([]);
  });

  it('a second create of the sandbox with another egress is refused with 409, not handed out', async () => {
    await start({ SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128' });
    standin.seed('service', proxyService());
    expect((await call('POST', '/api/sandboxes', { sandbox_id: 'n6' })).status).toBe(200);
    const again = await call('POST', '/api/sandboxes', { sandbox_id: 'n6', network_mode: 'none' });
    expect(again.status).toBe(409);
    expect(String(again.body.detail)).toMatch(/another network policy/);
    // The same egress again is the same sandbox.
    expect((await call('POST', '/api/sandboxes', { sandbox_id: 'n6' })).status).toBe(200);
  });

  it('garbage collection removes a NetworkPolicy whose Pod is gone', async () => {
    const running = await start({ SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128' });
    standin.seed('service', proxyService());
    await kube.createNetworkPolicy(NS, {
      metadata: {
        name: 'sandbox-n7-egress',
        labels: { app: 'sbx-sandbox', 'sandbox-id': 'n7' },
        creationTimestamp: new Date(0).toISOString(),
      },
      spec: { podSelector: { matchLabels: { 'sandbox-id': 'n7' } }, policyTypes: ['Egress'] },
    });
    // Older than the grace: the stand-in stamps now, so the pass is asked with a zero grace.
    (running.settings as { gcGraceMs: number }).gcGraceMs = -1;
    await running.pods.collectGarbage();
    expect(policyOf('n7')).toBeUndefined();
  });
});

describe('without SANDBOX_EGRESS_PROXY', () => {
  it('open egress makes no NetworkPolicy (unrestricted, as before)', async () => {
    await start();
    expect((await call('POST', '/api/sandboxes', { sandbox_id: 'o1' })).status).toBe(200);
    expect(standin.networkPolicies(NS)).toEqual([]);
  });

  it('network_mode none still gets a NetworkPolicy with no egress', async () => {
    await start();
    expect(
      (await call('POST', '/api/sandboxes', { sandbox_id: 'o2', network_mode: 'none' })).status,
    ).toBe(200);
    expect(policyOf('o2')!.spec.egress ?? []).toEqual([]);
  });

  it('an allowlist is refused at create (422): its rules are the proxy’s configuration', async () => {
    await start();
    const res = await call('POST', '/api/sandboxes', {
      sandbox_id: 'o3',
      network_mode: 'allowlist',
    });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body)).toMatch(/network_mode/);
    expect(standin.calls('create', 'pods')).toEqual([]);
  });
});

describe('capabilities', () => {
  it('say whether none is enforced and whether open goes through a proxy', async () => {
    await start({ SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128' });
    expect((await call('GET', '/api/capabilities')).body).toMatchObject({
      network_none: true,
      egress_proxy: true,
    });
    await provisioner!.close();
    await start();
    expect((await call('GET', '/api/capabilities')).body).toMatchObject({
      network_none: true,
      egress_proxy: false,
    });
  });
});
