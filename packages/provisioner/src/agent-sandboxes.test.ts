import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentSandboxes, sandboxPhase } from './agent-sandboxes.js';
import { parseCreateRequest } from './create-request.js';
import { connectKubeApi } from './kube-api.js';
import type { KubeApi } from './kube-api.js';
import type { AgentSandbox } from './kube-objects.js';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import { startProvisioner } from './provisioner-server.js';
import type { RunningProvisioner } from './provisioner-server.js';
import { sandboxPod } from './sandbox-objects.js';
import { KubeStandin } from './testing/kube-standin.js';
import type { KubeStandinOptions } from './testing/kube-standin.js';

// SANDBOX_BACKEND=agent-sandbox: one kubernetes-sigs/agent-sandbox `Sandbox` per sandbox, against
// the stand-in's Sandbox resource (validated by the CRD's schema) and its small controller.

const NS = 'agents';
const KEY = 'k';
let dir: string;
let standin: KubeStandin;
let kube: KubeApi;
let provisioner: RunningProvisioner | undefined;

function settings(env: Record<string, string> = {}) {
  return resolveProvisionerSettings({
    env: {
      SANDBOX_BACKEND: 'agent-sandbox',
      PROVISIONER_API_KEY: KEY,
      NODE_HOST: '127.0.0.1',
      PROVISIONER_PORT: '0',
      K8S_NAMESPACE: NS,
      SBX_HOST_BASE_DIR: '/srv/sbx',
      SANDBOX_GC_INTERVAL_SECONDS: '0',
      SANDBOX_DELETE_TIMEOUT_SECONDS: '5',
      ...env,
    },
  });
}

async function start(env: Record<string, string> = {}, options: KubeStandinOptions = {}) {
  dir = await mkdtemp(path.join(tmpdir(), 'sbx-agents-'));
  standin = await KubeStandin.start(options);
  kube = await connectKubeApi({ kubeconfigPath: await standin.writeKubeconfig(dir), waitMs: 0 });
  provisioner = await startProvisioner({ settings: settings(env), kube, pollIntervalMs: 10 });
}

afterEach(async () => {
  await provisioner?.close();
  provisioner = undefined;
  await standin?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function call(method: string, route: string, body?: unknown) {
  const res = await fetch(`${provisioner!.url}${route}`, {
    method,
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('the Sandbox object', () => {
  it('carries sbx’s Pod spec and labels as its template, a headless service and a shutdownTime backstop', () => {
    const s = settings({ SANDBOX_RUNTIME_CLASS_NAME: 'gvisor' });
    const now = Date.parse('2026-01-01T00:00:00Z');
    const backend = new AgentSandboxes({
      settings: s,
      kube: undefined as unknown as KubeApi,
      clock: {
        now: () => now,
        setTimeout: () => 0 as never,
        clearTimeout: () => undefined,
      } as never,
    });
    const request = parseCreateRequest({ sandbox_id: 'ab1', thread_id: 't' });
    const object = backend.sandboxObject(request);
    const pod = sandboxPod(s, request);
    expect(object).toMatchObject({
      apiVersion: 'agents.x-k8s.io/v1alpha1',
      kind: 'Sandbox',
      metadata: { name: 'sandbox-ab1', namespace: NS, labels: pod.metadata!.labels },
      spec: {
        podTemplate: { metadata: { labels: pod.metadata!.labels }, spec: pod.spec },
        service: true,
        shutdownTime: '2026-01-02T00:00:00Z',
        shutdownPolicy: 'Delete',
      },
    });
    expect(object.spec.podTemplate.spec.runtimeClassName).toBe('gvisor');
    expect(
      new AgentSandboxes({
        settings: settings({ SANDBOX_SHUTDOWN_AFTER_SECONDS: '0' }),
        kube: undefined as unknown as KubeApi,
      }).sandboxObject(request).spec.shutdownTime,
    ).toBeUndefined();
  });

  it('maps the Ready condition (and its reasons) to the API’s status', () => {
    const withReady = (status: 'True' | 'False', reason: string): AgentSandbox => ({
      spec: { podTemplate: { spec: { containers: [] } } },
      status: { conditions: [{ type: 'Ready', status, reason }] },
    });
    expect(sandboxPhase(withReady('True', 'DependenciesReady'))).toBe('Running');
    expect(sandboxPhase(withReady('False', 'DependenciesNotReady'))).toBe('Pending');
    expect(sandboxPhase(withReady('False', 'PodFailed'))).toBe('Failed');
    expect(sandboxPhase(withReady('False', 'SandboxExpired'))).toBe('Failed');
    expect(sandboxPhase(withReady('False', 'PodSucceeded'))).toBe('Succeeded');
    expect(sandboxPhase({ spec: { podTemplate: { spec: { containers: [] } } } })).toBe('Pending');
    expect(
      sandboxPhase({
        ...withReady('True', 'DependenciesReady'),
        metadata: { deletionTimestamp: '2026-01-01T00:00:00Z' },
      }),
    ).toBe('Terminating');
  });
});

describe('the stand-in’s Sandbox resource follows the CRD schema', () => {
  it('refuses what the schema refuses, per version, with a 422', async () => {
    await start();
    const base = new AgentSandboxes({ settings: settings(), kube }).sandboxObject(
      parseCreateRequest({ sandbox_id: 'v1' }),
    );
    const refused = async (version: string, body: unknown) => {
      try {
        await kube.createSandbox(NS, version, body as AgentSandbox);
      } catch (err) {
        return err as { status: number; message: string };
      }
      throw new Error('accepted');
    };
    const misspelt = { ...base, spec: { ...base.spec, shutdownPolicyy: 'Delete' } };
    expect((await refused('v1alpha1', misspelt)).message).toContain(
      'unknown field "spec.shutdownPolicyy"',
    );
    const badPolicy = { ...base, spec: { ...base.spec, shutdownPolicy: 'Remove' } };
    expect((await refused('v1alpha1', badPolicy)).status).toBe(422);
    const replicasInBeta = {
      ...base,
      apiVersion: 'agents.x-k8s.io/v1beta1',
      spec: { ...base.spec, replicas: 1 },
    };
    expect((await refused('v1beta1', replicasInBeta)).message).toContain('spec.replicas');
    const noTemplateSpec = { ...base, spec: { podTemplate: { metadata: {} } } };
    expect((await refused('v1alpha1', noTemplateSpec)).message).toContain(
      'spec.podTemplate.spec: Required value',
    );
    const overLimit = structuredClone(base);
    overLimit.spec.podTemplate.spec.containers[0]!.resources!.requests!.cpu = '2';
    expect((await refused('v1alpha1', overLimit)).message).toContain(
      'must be less than or equal to cpu limit',
    );
    // What sbx writes is accepted by both versions.
    await kube.createSandbox(NS, 'v1alpha1', base);
    await kube.createSandbox(NS, 'v1beta1', {
      ...base,
      apiVersion: 'agents.x-k8s.io/v1beta1',
      metadata: { ...base.metadata, name: 'sandbox-v2' },
    });
  });
});

describe('SANDBOX_BACKEND=agent-sandbox over the HTTP API', () => {
  it('a create makes one Sandbox; the controller’s Pod answers at the NodePort URL; get, list and delete go through the Sandbox', async () => {
    await start();
    const created = await call('POST', '/api/sandboxes', { sandbox_id: 'as1' });
    expect(created.status).toBe(200);
    expect(created.body.status).toBe('Running');
    expect(standin.sandboxes(NS).map((s) => s.metadata!.name)).toEqual(['sandbox-as1']);
    expect(standin.calls('create', 'pods')).toEqual([]); // the controller made the Pod
    expect(standin.pods(NS).map((p) => p.metadata!.name)).toEqual(['sandbox-as1']);
    const nodePortService = standin.services(NS).find((s) => s.spec?.type === 'NodePort')!;
    expect(nodePortService.metadata!.ownerReferences![0]).toMatchObject({
      kind: 'Sandbox',
      name: 'sandbox-as1',
      uid: standin.sandboxes(NS)[0]!.metadata!.uid,
    });
    const url = created.body.sandbox_url as string;
    expect((await fetch(`${url}/v1/sandbox`)).status).toBe(200);

    expect((await call('GET', '/api/sandboxes/as1')).body).toEqual(created.body);
    expect((await call('GET', '/api/sandboxes')).body).toEqual({
      sandboxes: [created.body],
      count: 1,
    });
    // Idempotent: a second create reuses it.
    expect((await call('POST', '/api/sandboxes', { sandbox_id: 'as1' })).body).toEqual(
      created.body,
    );
    expect(standin.calls('create', 'sandboxes')).toHaveLength(1);

    const deleted = await call('DELETE', '/api/sandboxes/as1');
    expect(deleted.body).toEqual({ ok: true, sandbox_id: 'as1', terminated: true });
    expect(standin.sandboxes(NS)).toEqual([]);
    expect(standin.services(NS)).toEqual([]);
    await expect.poll(() => standin.pods(NS).length).toBe(0);
    expect((await call('GET', '/api/sandboxes/as1')).status).toBe(404);
  });

  it('network_mode none is refused (422, nothing made): this backend makes no NetworkPolicy', async () => {
    await start();
    const res = await call('POST', '/api/sandboxes', { sandbox_id: 'as9', network_mode: 'none' });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body)).toMatch(/pods backend only/);
    expect(standin.sandboxes(NS)).toEqual([]);
    expect((await call('GET', '/api/capabilities')).body).toMatchObject({
      network_none: false,
      egress_proxy: false,
    });
  });

  it('ClusterIP: the URL is the controller’s Service (status.serviceFQDN)', async () => {
    await start({ SANDBOX_SERVICE_TYPE: 'ClusterIP' });
    const created = await call('POST', '/api/sandboxes', { sandbox_id: 'as2' });
    expect(created.body.sandbox_url).toBe(`http://sandbox-as2.${NS}.svc.cluster.local:8080`);
    expect(standin.services(NS).map((s) => [s.metadata!.name, s.spec!.clusterIP])).toEqual([
      ['sandbox-as2', 'None'],
    ]);
  });

  it('a Sandbox not Ready behind an allocated node port is answered as Pending', async () => {
    await start({}, { nodePorts: 'immediate' });
    standin.pauseKubelet();
    const created = await call('POST', '/api/sandboxes', { sandbox_id: 'as3' });
    expect(created.status).toBe(200);
    expect(created.body.status).toBe('Pending');
    standin.resumeKubelet();
    await expect
      .poll(async () => (await call('GET', '/api/sandboxes/as3')).body.status, { timeout: 15_000 })
      .toBe('Running');
  });

  it('the shutdownTime backstop: the controller removes the Sandbox, its Pod and Services with no gateway involved', async () => {
    await start({ SANDBOX_SHUTDOWN_AFTER_SECONDS: '2' });
    expect((await call('POST', '/api/sandboxes', { sandbox_id: 'as4' })).status).toBe(200);
    await expect
      .poll(() => standin.sandboxes(NS).length + standin.services(NS).length, { timeout: 20_000 })
      .toBe(0);
    await expect.poll(() => standin.pods(NS).length, { timeout: 20_000 }).toBe(0);
    expect((await call('GET', '/api/sandboxes/as4')).status).toBe(404);
  });

  it('attack: a Sandbox being deleted is never answered; a create waits for it to go and makes it afresh', async () => {
    await start({}, { nodePorts: 'immediate' });
    await call('POST', '/api/sandboxes', { sandbox_id: 'as5' });
    const oldUid = standin.sandboxes(NS)[0]!.metadata!.uid;
    standin.holdTerminations();
    await kube.deleteSandbox(NS, 'v1alpha1', 'sandbox-as5');
    expect((await call('GET', '/api/sandboxes/as5')).status).toBe(404);
    expect((await call('GET', '/api/sandboxes')).body.count).toBe(0);
    const from = standin.requests.length;
    const again = call('POST', '/api/sandboxes', { sandbox_id: 'as5' });
    await standin.nextCall(
      (r) => r.verb === 'create' && r.resource === 'sandboxes' && r.status === 409,
      from,
    );
    standin.releaseTerminations();
    const answer = await again;
    expect(answer.status).toBe(200);
    expect(standin.sandboxes(NS)).toHaveLength(1);
    expect(standin.sandboxes(NS)[0]!.metadata!.uid).not.toBe(oldUid);
  }, 30_000);

  it('the collector removes a NodePort Service whose Sandbox is gone, after the grace', async () => {
    await start();
    standin.seed(
      'service',
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
          name: 'sandbox-orphan-svc',
          namespace: NS,
          labels: { app: 'sbx-sandbox', 'sandbox-id': 'orphan' },
        },
        spec: { type: 'NodePort', selector: { 'sandbox-id': 'orphan' }, ports: [{ port: 8080 }] },
      },
      600,
    );
    expect(await provisioner!.pods.collectGarbage()).toEqual({ pods: [], services: ['orphan'] });
  });
});
