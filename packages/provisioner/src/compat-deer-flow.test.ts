import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isSbxError } from '@sbx/core';
import { afterEach, describe, expect, it } from 'vitest';
import { parseCreateRequest } from './create-request.js';
import { connectKubeApi } from './kube-api.js';
import type { Pod, Service } from './kube-objects.js';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import { startProvisioner } from './provisioner-server.js';
import type { RunningProvisioner } from './provisioner-server.js';
import { sandboxPod } from './sandbox-objects.js';
import { KubeStandin } from './testing/kube-standin.js';

// SANDBOX_COMPAT=deer-flow: the reference provisioner's label, namespace, paths and PVC prefix,
// so an sbx provisioner sees, collects and reuses a running reference deployment's Pods and data.

// The reference's objects, as it labels them (built here from its documented shape, not by sbx).
const REF_APP = ['deer', 'flow', 'sandbox'].join('-');
function referencePod(id: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `sandbox-${id}`,
      namespace: 'deer-flow',
      labels: {
        app: REF_APP,
        'sandbox-id': id,
        'app.kubernetes.io/name': 'deer-flow',
        'app.kubernetes.io/component': 'sandbox',
      },
    },
    spec: { containers: [{ name: 'sandbox', image: 'aio:1' }] },
  };
}
function referenceService(id: string): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: `sandbox-${id}-svc`,
      namespace: 'deer-flow',
      labels: { ...referencePod(id).metadata!.labels },
    },
    spec: {
      type: 'NodePort',
      selector: { 'sandbox-id': id },
      ports: [{ name: 'http', port: 8080, targetPort: 8080, protocol: 'TCP' }],
    },
  };
}

describe('compatibility settings', () => {
  it('deer-flow takes the reference’s namespace, paths and PVC prefix as defaults; set values still win', () => {
    const s = resolveProvisionerSettings({ env: { SANDBOX_COMPAT: 'deer-flow' } });
    expect(s).toMatchObject({
      compat: 'deer-flow',
      namespace: 'deer-flow',
      threadsHostPath: '/.deer-flow/threads',
      hostBaseDir: '/.deer-flow',
      userDataPvcSubpathPrefix: 'deer-flow',
    });
    const set = resolveProvisionerSettings({
      env: { SANDBOX_COMPAT: 'deer-flow', K8S_NAMESPACE: 'mine', USERDATA_PVC_SUBPATH_PREFIX: 'x' },
    });
    expect([set.namespace, set.userDataPvcSubpathPrefix]).toEqual(['mine', 'x']);
    expect(resolveProvisionerSettings({ file: { compat: 'deer-flow' } }).namespace).toBe(
      'deer-flow',
    );
  });

  it('an unknown profile stops the start-up, naming the setting', () => {
    try {
      resolveProvisionerSettings({ env: { SANDBOX_COMPAT: 'deerflow' } });
      throw new Error('accepted');
    } catch (err) {
      expect(isSbxError(err) && err.code).toBe('CONFIG_INVALID');
      expect((err as Error).message).toContain('SANDBOX_COMPAT');
    }
  });

  it('Pods carry the reference’s labels, and user data on the PVC is at the reference’s sub-path', () => {
    const s = resolveProvisionerSettings({
      env: { SANDBOX_COMPAT: 'deer-flow', USERDATA_PVC_NAME: 'data' },
    });
    const pod = sandboxPod(
      s,
      parseCreateRequest({ sandbox_id: 'a1', thread_id: 't1', user_id: 'u1' }),
    );
    expect(pod.metadata!.labels).toMatchObject(referencePod('a1').metadata!.labels!);
    expect(pod.metadata!.namespace).toBe('deer-flow');
    const userData = pod.spec!.containers[0]!.volumeMounts!.find((m) => m.name === 'user-data');
    expect(userData!.subPath).toBe('deer-flow/users/u1/threads/t1/user-data');
  });
});

describe('taking over a running reference deployment (stand-in cluster)', () => {
  let dir: string;
  let standin: KubeStandin;
  let provisioner: RunningProvisioner;

  async function start(compat: 'sbx' | 'deer-flow'): Promise<void> {
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-compat-'));
    standin = await KubeStandin.start();
    const kube = await connectKubeApi({
      kubeconfigPath: await standin.writeKubeconfig(dir),
      waitMs: 0,
    });
    await kube.createNamespace({ metadata: { name: 'deer-flow' } });
    standin.seed('pod', referencePod('live1'), 600);
    standin.seed('service', referenceService('live1'), 600);
    standin.seed('pod', referencePod('lone1'), 600); // its Service is gone: a leak
    provisioner = await startProvisioner({
      settings: resolveProvisionerSettings({
        env: {
          SANDBOX_COMPAT: compat,
          K8S_NAMESPACE: 'deer-flow',
          PROVISIONER_API_KEY: 'k',
          PROVISIONER_PORT: '0',
          NODE_HOST: '127.0.0.1',
          SANDBOX_GC_INTERVAL_SECONDS: '0',
        },
      }),
      kube,
      pollIntervalMs: 10,
    });
    await expect
      .poll(() => standin.pods('deer-flow').every((p) => p.status?.phase === 'Running'))
      .toBe(true);
  }

  afterEach(async () => {
    await provisioner.close();
    await standin.close();
    await rm(dir, { recursive: true, force: true });
  });

  const api = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${provisioner.url}${route}`, {
      method,
      headers: { 'x-api-key': 'k', 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('with SANDBOX_COMPAT=deer-flow it lists the reference’s sandboxes, reuses them and collects its leaks', async () => {
    await start('deer-flow');
    const list = await api('GET', '/api/sandboxes');
    expect(list.body.count).toBe(1);
    expect((list.body.sandboxes as { sandbox_id: string }[])[0]!.sandbox_id).toBe('live1');

    const reused = await api('POST', '/api/sandboxes', { sandbox_id: 'live1' });
    expect(reused.status).toBe(200);
    expect(reused.body.status).toBe('Running');
    expect(standin.calls('create', 'pods')).toEqual([]);

    const report = await provisioner.pods.collectGarbage();
    expect(report.pods).toEqual(['lone1']);
  });

  it('without it, the reference’s Pods are invisible to the list and the collector (the leak the setting closes)', async () => {
    await start('sbx');
    expect((await api('GET', '/api/sandboxes')).body.count).toBe(0);
    expect((await provisioner.pods.collectGarbage()).pods).toEqual([]);
  });
});
