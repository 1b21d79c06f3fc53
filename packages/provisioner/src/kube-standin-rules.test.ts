import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseCreateRequest } from './create-request.js';
import { connectKubeApi } from './kube-api.js';
import type { KubeApi } from './kube-api.js';
import type { KubeApiError } from './provisioner-errors.js';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import type { ProvisionerSettings } from './provisioner-settings.js';
import { sandboxPod, sandboxService } from './sandbox-objects.js';
import { KubeStandin } from './testing/kube-standin.js';

// The stand-in refuses what a real API server refuses, with the server's 422 Status, so a
// provisioner whose settings slipped past its own checks fails in a test as it would in a cluster.

let dir: string;
let standin: KubeStandin;
let kube: KubeApi;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sbx-standin-rules-'));
  standin = await KubeStandin.start();
  kube = await connectKubeApi({ kubeconfigPath: await standin.writeKubeconfig(dir), waitMs: 0 });
  await kube.createNamespace({ metadata: { name: 'rules' } });
});
afterEach(async () => {
  await standin.close();
  await rm(dir, { recursive: true, force: true });
});

const base = (): ProvisionerSettings =>
  resolveProvisionerSettings({ env: { K8S_NAMESPACE: 'rules', SBX_HOST_BASE_DIR: '/srv/sbx' } });

/** Settings as they would be without the start-up check (built past it, field by field). */
function unchecked(
  group: 'requests' | 'limits',
  field: string,
  value: string,
): ProvisionerSettings {
  const s = base();
  return { ...s, [group]: { ...s[group], [field]: value } };
}

async function refusal(settings: ProvisionerSettings): Promise<KubeApiError> {
  const pod = sandboxPod(settings, parseCreateRequest({ sandbox_id: 'r1' }));
  try {
    await kube.createPod('rules', pod);
  } catch (err) {
    return err as KubeApiError;
  }
  throw new Error('the stand-in accepted the Pod');
}

describe('the stand-in applies the API server’s resource rules', () => {
  for (const [name, group, field, value, resource] of [
    ['SANDBOX_CPU_REQUEST=2', 'requests', 'cpu', '2', 'cpu'],
    ['SANDBOX_MEMORY_REQUEST=2Gi', 'requests', 'memory', '2Gi', 'memory'],
    [
      'SANDBOX_EPHEMERAL_STORAGE_REQUEST=1Gi',
      'requests',
      'ephemeralStorage',
      '1Gi',
      'ephemeral-storage',
    ],
    ['SANDBOX_MEMORY_LIMIT=0', 'limits', 'memory', '0', 'memory'],
  ] as const) {
    it(`${name}: the Pod is refused with 422 Invalid, "must be less than or equal to ${resource} limit"`, async () => {
      const err = await refusal(unchecked(group, field, value));
      expect(err.status).toBe(422);
      expect(err.reason).toBe('Invalid');
      expect(err.message).toContain('Pod "sandbox-r1" is invalid');
      expect(err.message).toContain('spec.containers[0].resources.requests');
      expect(err.message).toContain(`must be less than or equal to ${resource} limit`);
      expect(standin.pods('rules')).toEqual([]);
    });
  }

  it('answers the server’s Status shape: details with the kind, name and one cause per field', async () => {
    const res = await fetch(`${standin.url}/api/v1/namespaces/rules/pods`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        sandboxPod(unchecked('limits', 'cpu', '1K'), parseCreateRequest({ sandbox_id: 'r2' })),
      ),
    });
    expect(res.status).toBe(422);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'Invalid',
      code: 422,
      details: {
        name: 'sandbox-r2',
        kind: 'Pod',
        causes: [
          { reason: 'FieldValueInvalid', field: 'spec.containers[0].resources.limits[cpu]' },
        ],
      },
    });
  });

  it('a negative quantity, a bad label value and a bad Service name are refused as the server does', async () => {
    expect((await refusal(unchecked('requests', 'cpu', '-1'))).message).toContain(
      'must be greater than or equal to 0',
    );
    const pod = sandboxPod(base(), parseCreateRequest({ sandbox_id: 'r3' }));
    pod.metadata!.labels = { ...pod.metadata!.labels, app: '-bad-' };
    await expect(kube.createPod('rules', pod)).rejects.toMatchObject({ status: 422 });
    const service = sandboxService(base(), 'r3');
    service.metadata!.name = '3-starts-with-a-digit';
    await expect(kube.createService('rules', service)).rejects.toMatchObject({ status: 422 });
  });

  it('what the settings accept, the stand-in accepts (a limit of 0 with a request of 0 included)', async () => {
    const s = resolveProvisionerSettings({
      env: {
        K8S_NAMESPACE: 'rules',
        SBX_HOST_BASE_DIR: '/srv/sbx',
        SANDBOX_MEMORY_LIMIT: '0',
        SANDBOX_MEMORY_REQUEST: '0',
        SANDBOX_CPU_REQUEST: '0.5',
        SANDBOX_CPU_LIMIT: '1e0',
      },
    });
    await kube.createPod('rules', sandboxPod(s, parseCreateRequest({ sandbox_id: 'r4' })));
    expect(standin.pods('rules')).toHaveLength(1);
  });
});

describe('the stand-in validates NetworkPolicies as the API server does', () => {
  const policy = (spec: Record<string, unknown>, name = 'p1') =>
    ({
      metadata: { name },
      spec: { podSelector: { matchLabels: { 'sandbox-id': 'r1' } }, ...spec },
    }) as unknown as Parameters<KubeApi['createNetworkPolicy']>[1];

  async function causes(body: Parameters<KubeApi['createNetworkPolicy']>[1]) {
    try {
      await kube.createNetworkPolicy('rules', body);
    } catch (err) {
      const e = err as KubeApiError;
      expect(e.status).toBe(422);
      expect(e.reason).toBe('Invalid');
      return e.message;
    }
    throw new Error('the stand-in accepted the NetworkPolicy');
  }

  // Each refusal built at run time, with the field the server names.
  for (const [name, spec, field] of [
    [
      'an unknown policy type',
      { policyTypes: ['Egr' + 'ess', 'Side' + 'ways'] },
      'spec.policyTypes[1]',
    ],
    [
      'a port above 65535',
      { policyTypes: ['Egress'], egress: [{ ports: [{ port: 65_535 + 1 }] }] },
      'spec.egress[0].ports[0].port',
    ],
    [
      'an unknown protocol',
      { policyTypes: ['Egress'], egress: [{ ports: [{ protocol: 'I' + 'CMP', port: 53 }] }] },
      'spec.egress[0].ports[0].protocol',
    ],
    [
      'a port name longer than an IANA service name',
      { policyTypes: ['Egress'], egress: [{ ports: [{ port: 'x'.repeat(16) }] }] },
      'spec.egress[0].ports[0].port',
    ],
    [
      'an endPort below the port',
      { policyTypes: ['Egress'], egress: [{ ports: [{ port: 8000, endPort: 7999 }] }] },
      'spec.egress[0].ports[0].endPort',
    ],
    [
      'a peer naming nothing',
      { policyTypes: ['Egress'], egress: [{ to: [{}] }] },
      'spec.egress[0].to[0]',
    ],
    [
      'an ipBlock beside a selector',
      {
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8' }, podSelector: {} }] }],
      },
      'spec.egress[0].to[0]',
    ],
    [
      'a malformed CIDR',
      { policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/' + '33' } }] }] },
      'spec.egress[0].to[0].ipBlock.cidr',
    ],
    [
      'a selector label value the server refuses',
      {
        policyTypes: ['Egress'],
        egress: [{ to: [{ podSelector: { matchLabels: { app: '-bad-' } } }] }],
      },
      'spec.egress[0].to[0].podSelector.matchLabels',
    ],
  ] as const) {
    it(`refuses ${name} with 422 naming ${field}`, async () => {
      expect(await causes(policy(spec))).toContain(`${field}:`);
    });
  }

  it('refuses a name that is no DNS-1123 subdomain', async () => {
    expect(await causes(policy({ policyTypes: ['Egress'] }, 'Bad_Name'))).toContain(
      'metadata.name:',
    );
  });

  it('accepts the policies the provisioner writes, defaulted as a server defaults them', async () => {
    const created = await kube.createNetworkPolicy(
      'rules',
      policy({
        policyTypes: ['Egress'],
        egress: [
          {
            to: [
              { podSelector: { matchLabels: { 'app.kubernetes.io/component': 'egress-proxy' } } },
            ],
            ports: [{ port: 'proxy' }],
          },
        ],
      }),
    );
    expect(created.spec.egress?.[0]?.ports).toEqual([{ port: 'proxy', protocol: 'TCP' }]);
    const none = await kube.createNetworkPolicy(
      'rules',
      policy({ policyTypes: ['Egress'], egress: [] }, 'p2'),
    );
    expect(none.spec.egress).toBeUndefined();
  });
});
