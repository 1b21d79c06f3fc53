import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dumpYaml, loadYaml } from '@kubernetes/client-node';
import { parseNetworkPolicy } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseCreateRequest } from './create-request.js';
import {
  AGENT_SANDBOX_GROUP,
  AGENT_SANDBOX_PERMISSIONS,
  KUBE_PERMISSIONS,
  NETWORKING_PERMISSIONS,
} from './kube-api.js';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import { SANDBOX_APP_LABEL, sandboxPod, sandboxService } from './sandbox-objects.js';
import { sandboxNetworkPolicy } from './sandbox-network-policy.js';

// Every object the project hands to Kubernetes, checked against @kubernetes/client-node's model
// types: an object is read into the typed model and written back, and must come back unchanged.
// A misspelt or misplaced field does not survive the trip (the model has no slot for it), so the
// comparison names it.

const deployDir = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../deploy/kubernetes',
);

function roundTrip(object: unknown): unknown {
  const typed = loadYaml(JSON.stringify(object));
  return parse(dumpYaml(typed)) as unknown;
}

async function manifests(): Promise<{ file: string; object: Record<string, unknown> }[]> {
  const files = (await readdir(deployDir)).filter(
    (f) => f.endsWith('.yaml') && f !== 'kustomization.yaml',
  );
  return Promise.all(
    files.sort().map(async (file) => ({
      file,
      object: parse(await readFile(path.join(deployDir, file), 'utf8')) as Record<string, unknown>,
    })),
  );
}

describe('deploy/kubernetes manifests', () => {
  it('each manifest is a valid object of its kind (survives the client’s model types unchanged)', async () => {
    const all = await manifests();
    expect(all.map((m) => `${m.file}:${String(m.object.kind)}`)).toEqual([
      'configmap.yaml:ConfigMap',
      'deployment.yaml:Deployment',
      'egress-proxy-configmap.yaml:ConfigMap',
      'egress-proxy-deployment.yaml:Deployment',
      'egress-proxy-networkpolicy.yaml:NetworkPolicy',
      'egress-proxy-service.yaml:Service',
      'namespace.yaml:Namespace',
      'networkpolicy.yaml:NetworkPolicy',
      'role.yaml:Role',
      'rolebinding.yaml:RoleBinding',
      'secret.yaml:Secret',
      'service.yaml:Service',
      'serviceaccount.yaml:ServiceAccount',
    ]);
    for (const { file, object } of all) {
      expect(roundTrip(object), file).toEqual(object);
    }
  });

  it('the kustomization lists every manifest', async () => {
    const kustomization = parse(
      await readFile(path.join(deployDir, 'kustomization.yaml'), 'utf8'),
    ) as { resources: string[] };
    expect(kustomization.resources.sort()).toEqual((await manifests()).map((m) => m.file));
  });

  it('the Role grants exactly the calls the provisioner makes, in its namespace only', async () => {
    const role = (await manifests()).find((m) => m.object.kind === 'Role')!.object as {
      metadata: { namespace: string };
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    const granted = Object.fromEntries(
      role.rules.map((r) => [r.resources.join(','), [...r.verbs].sort()]),
    );
    const used = Object.fromEntries(
      Object.entries({ ...KUBE_PERMISSIONS, ...NETWORKING_PERMISSIONS }).map(([k, v]) => [
        k,
        [...v].sort(),
      ]),
    );
    expect(granted).toEqual(used);
    const group = (resource: string) => (resource === 'networkpolicies' ? 'networking.k8s.io' : '');
    for (const r of role.rules) expect(r.apiGroups).toEqual([group(r.resources.join())]);
  });

  it('the Deployment runs the provisioner with the ConfigMap and Secret, as the Service account, not as root', async () => {
    const all = await manifests();
    const deployment = all.find((m) => m.object.kind === 'Deployment')!.object as {
      spec: {
        template: {
          spec: {
            serviceAccountName: string;
            securityContext: { runAsNonRoot: boolean };
            containers: { envFrom: unknown[] }[];
          };
        };
      };
    };
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe('sbx-provisioner');
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.containers[0]!.envFrom).toEqual([
      { configMapRef: { name: 'sbx-provisioner' } },
      { secretRef: { name: 'sbx-provisioner' } },
    ]);
    const config = all.find((m) => m.object.kind === 'ConfigMap')!.object as {
      data: Record<string, string>;
    };
    // The ConfigMap's settings are ones the provisioner accepts.
    expect(() => resolveProvisionerSettings({ env: config.data })).not.toThrow();
    expect(config.data.K8S_ENSURE_NAMESPACE).toBe('false');
  });
});

describe('deploy/kubernetes/agent-sandbox (the agent-sandbox backend’s manifest set)', () => {
  const dir = path.join(deployDir, 'agent-sandbox');
  const read = async (file: string) =>
    parse(await readFile(path.join(dir, file), 'utf8')) as Record<string, unknown>;

  it('builds on the base, adds the Sandbox RBAC and switches the backend', async () => {
    const kustomization = (await read('kustomization.yaml')) as {
      resources: string[];
      patches: { path: string }[];
    };
    expect(kustomization.resources).toEqual(['../', 'role.yaml', 'rolebinding.yaml']);
    expect(kustomization.patches).toEqual([{ path: 'configmap-patch.yaml' }]);
    for (const file of ['role.yaml', 'rolebinding.yaml']) {
      const object = await read(file);
      expect(roundTrip(object), file).toEqual(object);
    }
    const base = (await manifests()).find((m) => m.object.kind === 'ConfigMap')!.object as {
      data: Record<string, string>;
    };
    const patch = (await read('configmap-patch.yaml')) as { data: Record<string, string> };
    const merged = resolveProvisionerSettings({ env: { ...base.data, ...patch.data } });
    expect(merged.backend).toBe('agent-sandbox');
  });

  it('the Role grants exactly the Sandbox calls the backend makes, in the namespace only', async () => {
    const role = (await read('role.yaml')) as {
      kind: string;
      metadata: { namespace: string };
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    expect(role.kind).toBe('Role');
    expect(role.metadata.namespace).toBe('sbx');
    expect(role.rules.every((r) => r.apiGroups.join() === AGENT_SANDBOX_GROUP)).toBe(true);
    const granted = Object.fromEntries(
      role.rules.map((r) => [r.resources.join(','), [...r.verbs].sort()]),
    );
    expect(granted).toEqual(
      Object.fromEntries(
        Object.entries(AGENT_SANDBOX_PERMISSIONS).map(([k, v]) => [k, [...v].sort()]),
      ),
    );
    const binding = (await read('rolebinding.yaml')) as {
      roleRef: { name: string };
      subjects: { name: string }[];
    };
    expect(binding.roleRef.name).toBe('sbx-provisioner-agent-sandbox');
    expect(binding.subjects[0]!.name).toBe('sbx-provisioner');
  });
});

describe('the sandbox NetworkPolicy', () => {
  interface Peer {
    podSelector?: { matchLabels: Record<string, string> };
    namespaceSelector?: { matchLabels: Record<string, string> };
  }
  interface Rule {
    from?: Peer[];
    to?: Peer[];
    ports: { protocol: string; port: number }[];
  }
  async function policy() {
    return (await manifests()).find((m) => m.file === 'networkpolicy.yaml')!.object as {
      metadata: { namespace: string };
      spec: {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress: Rule[];
        egress: Rule[];
      };
    };
  }

  it('selects the sandbox Pods and restricts both directions', async () => {
    const p = await policy();
    expect(p.spec.podSelector.matchLabels).toEqual({ app: SANDBOX_APP_LABEL });
    expect(p.spec.policyTypes.sort()).toEqual(['Egress', 'Ingress']);
    expect(p.metadata.namespace).toBe('sbx');
  });

  it('only gateways reach a sandbox, on its port', async () => {
    const p = await policy();
    expect(p.spec.ingress).toHaveLength(1);
    expect(p.spec.ingress[0]!.from).toEqual([
      { podSelector: { matchLabels: { 'app.kubernetes.io/component': 'gateway' } } },
    ]);
    expect(p.spec.ingress[0]!.ports).toEqual([{ protocol: 'TCP', port: 8080 }]);
  });

  it('grants no egress: each sandbox’s own policy does (NetworkPolicies add up)', async () => {
    const p = await policy();
    expect(p.spec.egress).toBeUndefined();
  });
});

describe('the egress proxy manifests', () => {
  const find = async (file: string) => (await manifests()).find((m) => m.file === file)!.object;

  it('SANDBOX_EGRESS_PROXY names the proxy Service, whose selector picks the proxy Pods and whose port targets theirs', async () => {
    const config = (await find('configmap.yaml')) as { data: Record<string, string> };
    const settings = resolveProvisionerSettings({ env: config.data });
    const [name, port] = settings.egressProxy.split(':');
    const service = (await find('egress-proxy-service.yaml')) as {
      metadata: { name: string };
      spec: {
        selector: Record<string, string>;
        ports: { port: number; targetPort: string }[];
      };
    };
    expect(service.metadata.name).toBe(name);
    const servicePort = service.spec.ports.find((p) => p.port === Number(port))!;
    const deployment = (await find('egress-proxy-deployment.yaml')) as {
      spec: {
        template: {
          metadata: { labels: Record<string, string> };
          spec: {
            automountServiceAccountToken: boolean;
            securityContext: { runAsNonRoot: boolean };
            containers: { ports: { name: string; containerPort: number }[] }[];
          };
        };
      };
    };
    const pod = deployment.spec.template;
    expect(pod.metadata.labels).toMatchObject(service.spec.selector);
    expect(pod.spec.containers[0]!.ports.map((p) => p.name)).toContain(servicePort.targetPort);
    expect(pod.spec.automountServiceAccountToken).toBe(false);
    expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
  });

  it('the proxy’s policy is one the network policy parser accepts, without credentials', async () => {
    const config = (await find('egress-proxy-configmap.yaml')) as { data: Record<string, string> };
    const policy = parseNetworkPolicy(JSON.parse(config.data.SBX_EGRESS_POLICY!));
    expect(policy.mode).toBe('allowlist');
    expect(policy.credentials).toEqual([]);
  });

  it('only sandbox Pods reach the proxy, on its port', async () => {
    const p = (await find('egress-proxy-networkpolicy.yaml')) as {
      spec: { policyTypes: string[]; ingress: unknown[] };
    };
    expect(p.spec.policyTypes).toEqual(['Ingress']);
    expect(p.spec.ingress).toEqual([
      {
        from: [{ podSelector: { matchLabels: { app: SANDBOX_APP_LABEL } } }],
        ports: [{ protocol: 'TCP', port: 3128 }],
      },
    ]);
  });
});

describe('the objects the provisioner creates', () => {
  const settings = resolveProvisionerSettings({
    env: {
      LARK_CLI_BROKER_IMAGE: 'broker:1',
      USERDATA_PVC_NAME: 'data',
      SANDBOX_RUN_AS_USER: '1000',
      SANDBOX_RUNTIME_CLASS_NAME: 'gvisor',
      SANDBOX_ACTIVE_DEADLINE_SECONDS: '86400',
    },
  });
  const request = parseCreateRequest({
    sandbox_id: 'abc123',
    thread_id: 't1',
    user_id: 'u',
    provision_lark_cli_broker: true,
    extra_mounts: [
      {
        host_path: '/var/lib/sbx/users/u/lark/config',
        container_path: '/mnt/integrations/lark-cli/config',
        read_only: true,
      },
    ],
  });

  it('the sandbox Pod (with every optional part) is a valid V1Pod', () => {
    const pod = sandboxPod(settings, request);
    expect(pod.spec).toMatchObject({ runtimeClassName: 'gvisor', activeDeadlineSeconds: 86400 });
    expect(roundTrip(pod)).toEqual(pod);
  });

  it('the sandbox NetworkPolicies (through the proxy, and none) are valid V1NetworkPolicies', () => {
    const route = { proxyUrl: 'http://10.96.0.9:3128', podLabels: { a: 'b' }, podPort: 'proxy' };
    for (const mode of ['open', 'none'] as const) {
      const policy = sandboxNetworkPolicy(settings, 'abc123', mode, route)!;
      expect(roundTrip(policy)).toEqual(policy);
    }
  });

  it('the sandbox Service is a valid V1Service', () => {
    const service = sandboxService(settings, 'abc123');
    expect(roundTrip(service)).toEqual(service);
  });

  it('a misspelt field is caught by the round trip (the check can fail)', () => {
    const service = sandboxService(settings, 'abc123') as unknown as {
      spec: Record<string, unknown>;
    };
    service.spec.tpye = 'NodePort';
    expect(roundTrip(service)).not.toEqual(service);
  });
});
