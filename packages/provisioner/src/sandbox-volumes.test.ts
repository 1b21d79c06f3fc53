import { describe, expect, it } from 'vitest';
import { parseCreateRequest } from './create-request.js';
import type { Pod } from './kube-objects.js';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import type { ProvisionerSettings } from './provisioner-settings.js';
import { accessUrl, sandboxPod, sandboxService } from './sandbox-objects.js';

const BASE = '/data/sbx';
function settings(env: Record<string, string> = {}): ProvisionerSettings {
  return resolveProvisionerSettings({ env: { THREADS_HOST_PATH: `${BASE}/threads`, ...env } });
}
function pod(body: Record<string, unknown>, env: Record<string, string> = {}): Pod {
  return sandboxPod(settings(env), parseCreateRequest({ sandbox_id: 'abc123', ...body }));
}
const sandboxContainer = (p: Pod) => p.spec!.containers.find((c) => c.name === 'sandbox')!;
const volumeNames = (p: Pod) => p.spec!.volumes!.map((v) => v.name);
const volume = (p: Pod, name: string) => p.spec!.volumes!.find((v) => v.name === name)!;
const mount = (p: Pod, at: string) =>
  sandboxContainer(p).volumeMounts!.find((m) => m.mountPath === at);

describe('sandbox volumes, hostPath mode', () => {
  it('§9.5.64 four volumes: three skills views and the thread’s user data', () => {
    for (const legacy of [false, true]) {
      const p = pod({ thread_id: 'thread-42', user_id: 'alice', include_legacy_skills: legacy });
      expect(volumeNames(p)).toEqual([
        'skills-public',
        'skills-custom',
        'skills-legacy',
        'user-data',
      ]);
      expect(volume(p, 'skills-public').hostPath).toEqual({
        path: `${BASE}/skills_view/public`,
        type: 'Directory',
      });
      expect(volume(p, 'skills-custom').hostPath!.path).toContain('users/alice/skills_view/custom');
      expect(volume(p, 'skills-legacy').hostPath!.path).toContain('users/alice/skills_view/legacy');
      expect(volume(p, 'skills-legacy').hostPath!.type).toBe('Directory');
      const data = volume(p, 'user-data').hostPath!;
      expect(data.path).toBe(`${BASE}/users/alice/threads/thread-42/user-data`);
      expect(data.type).toBe('DirectoryOrCreate');
    }
    expect(volume(pod({ thread_id: 't' }), 'skills-legacy').hostPath!.path).toContain(
      'users/default/skills_view/legacy',
    );
  });

  it('§9.5.65 skills mounted read-only below /mnt/skills, user data read-write, no sub-paths', () => {
    const p = pod({ thread_id: 't1', user_id: 'u1' });
    for (const c of ['public', 'custom', 'legacy']) {
      expect(mount(p, `/mnt/skills/${c}`)).toEqual({
        name: `skills-${c}`,
        mountPath: `/mnt/skills/${c}`,
        readOnly: true,
      });
    }
    expect(mount(p, '/mnt/user-data')).toEqual({
      name: 'user-data',
      mountPath: '/mnt/user-data',
      readOnly: false,
    });
  });

  it('§9.5.75 volume and mount names are the same with and without include_legacy_skills', () => {
    const names = (legacy: boolean) => {
      const p = pod({ thread_id: 't', include_legacy_skills: legacy });
      return [volumeNames(p), sandboxContainer(p).volumeMounts!.map((m) => m.name)];
    };
    expect(names(true)).toEqual(names(false));
  });

  it('a custom skills root moves the skills mounts', () => {
    const p = pod({ thread_id: 't', skills_container_path: '/opt/skills/' });
    expect(mount(p, '/opt/skills/public')?.name).toBe('skills-public');
    expect(mount(p, '/mnt/skills/public')).toBeUndefined();
  });
});

describe('user data is keyed by user and thread', () => {
  it('attack: two users with the same thread id get two user-data directories, in hostPath and PVC mode', () => {
    // One thread id chosen by two tenants (ids are not secret, and a client may pick them).
    const threadId = ['shared', 'thread'].join('-');
    for (const env of [{}, { USERDATA_PVC_NAME: 'data-pvc' }] as Record<string, string>[]) {
      const where = (userId: string) => {
        const p = pod({ thread_id: threadId, user_id: userId }, env);
        const data = volume(p, 'user-data');
        return data.hostPath?.path ?? mount(p, '/mnt/user-data')!.subPath!;
      };
      expect(where('alice')).not.toBe(where('bob'));
      expect(where('alice')).toMatch(/users\/alice\/threads\/shared-thread\/user-data$/);
    }
  });

  it('is the same relative path below the host base as below the PVC prefix (the gateway’s layout)', () => {
    const host = volume(pod({ thread_id: 't9', user_id: 'u9' }), 'user-data').hostPath!.path;
    const pvc = mount(
      pod({ thread_id: 't9', user_id: 'u9' }, { USERDATA_PVC_NAME: 'd' }),
      '/mnt/user-data',
    )!.subPath!;
    expect(host.slice(BASE.length + 1)).toBe(pvc.slice('sbx/'.length));
  });

  it('a create asking to mount the former threads directory or another tenant is a 400, nothing planned', () => {
    for (const host_path of [
      `${BASE}/threads`,
      `${BASE}/threads/`,
      `${BASE}//threads`,
      `${BASE}/users`,
      `${BASE}/users/bob/threads/t/acp-workspace`,
    ]) {
      let status: number | undefined;
      try {
        pod({
          thread_id: 't',
          user_id: 'alice',
          extra_mounts: [{ host_path, container_path: '/mnt/acp-workspace' }],
        });
      } catch (err) {
        status = (err as { status?: number }).status;
      }
      expect(status, host_path).toBe(400);
    }
  });
});

describe('sandbox volumes, PVC mode', () => {
  it('§9.5.66 one read-only skills PVC at /mnt/skills, sub-path only with a template', () => {
    const plain = pod(
      { thread_id: 'thread-42', user_id: 'user-7' },
      { SKILLS_PVC_NAME: 'skills-pvc' },
    );
    expect(volumeNames(plain)).toEqual(['skills', 'user-data']);
    expect(volume(plain, 'skills').persistentVolumeClaim).toEqual({
      claimName: 'skills-pvc',
      readOnly: true,
    });
    expect(mount(plain, '/mnt/skills')).toEqual({
      name: 'skills',
      mountPath: '/mnt/skills',
      readOnly: true,
    });
    const templated = pod(
      { thread_id: 'thread-42', user_id: 'user-7' },
      {
        SKILLS_PVC_NAME: 'skills-pvc',
        SKILLS_PVC_SUBPATH_TEMPLATE: 'sbx/users/{user_id}/threads/{thread_id}/skills',
      },
    );
    expect(mount(templated, '/mnt/skills')!.subPath).toBe(
      'sbx/users/user-7/threads/thread-42/skills',
    );
  });

  it('§9.5.67 the user-data PVC with a per-user, per-thread sub-path (user "default" by default)', () => {
    const p = pod({ thread_id: 'thread-42' }, { USERDATA_PVC_NAME: 'data-pvc' });
    expect(volume(p, 'user-data').persistentVolumeClaim).toEqual({ claimName: 'data-pvc' });
    expect(mount(p, '/mnt/user-data')!.subPath).toBe(
      'sbx/users/default/threads/thread-42/user-data',
    );
    const legacyLayout = pod(
      { thread_id: 'thread-42', user_id: 'bob' },
      { USERDATA_PVC_NAME: 'data-pvc', USERDATA_PVC_SUBPATH_PREFIX: 'deer-flow' },
    );
    expect(mount(legacyLayout, '/mnt/user-data')!.subPath).toBe(
      'deer-flow/users/bob/threads/thread-42/user-data',
    );
  });
});

describe('extra mounts', () => {
  const larkConfig = {
    host_path: `${BASE}/users/alice/integrations/lark-cli/config`,
    container_path: '/mnt/integrations/lark-cli/config',
    read_only: false,
  };

  it('§9.5.68 an extra mount is extra-0: hostPath DirectoryOrCreate (rw), or the data PVC with a sub-path', () => {
    const host = pod({ thread_id: 't', user_id: 'alice', extra_mounts: [larkConfig] });
    expect(volume(host, 'extra-0').hostPath).toEqual({
      path: larkConfig.host_path,
      type: 'DirectoryOrCreate',
    });
    const ro = pod({
      thread_id: 't',
      user_id: 'alice',
      extra_mounts: [{ ...larkConfig, read_only: true }],
    });
    expect(volume(ro, 'extra-0').hostPath!.type).toBe('Directory');
    const pvc = pod(
      { thread_id: 't', user_id: 'alice', extra_mounts: [larkConfig] },
      { USERDATA_PVC_NAME: 'data-pvc', USERDATA_PVC_SUBPATH_PREFIX: 'deer-flow' },
    );
    expect(volume(pvc, 'extra-0').persistentVolumeClaim).toEqual({ claimName: 'data-pvc' });
    expect(mount(pvc, '/mnt/integrations/lark-cli/config')!.subPath).toBe(
      'deer-flow/users/alice/integrations/lark-cli/config',
    );
  });

  it('§9.5.70 volume and mount counts: 4 hostPath, 2 PVC, 6 with two extra mounts', () => {
    const two = [{ host_path: `${BASE}/acp`, container_path: '/mnt/acp-workspace' }, larkConfig];
    expect(pod({ thread_id: 't' }).spec!.volumes).toHaveLength(4);
    expect(
      pod({ thread_id: 't' }, { SKILLS_PVC_NAME: 's', USERDATA_PVC_NAME: 'd' }).spec!.volumes,
    ).toHaveLength(2);
    const p = pod({ thread_id: 't', user_id: 'alice', extra_mounts: two });
    expect(p.spec!.volumes).toHaveLength(6);
    expect(sandboxContainer(p).volumeMounts).toHaveLength(6);
    expect(mount(p, '/mnt/acp-workspace')?.name).toBe('extra-0');
    expect(mount(p, '/mnt/integrations/lark-cli/config')?.name).toBe('extra-1');
  });

  it('§5.5 all four skill categories as extra mounts suppress the default skills volumes (hostPath and PVC)', () => {
    const four = ['public', 'custom', 'legacy', 'integrations'].map((c) => ({
      host_path: `${BASE}/users/u/threads/t/skills_view/${c}`,
      container_path: `/mnt/skills/${c}`,
      read_only: true,
    }));
    for (const env of [{}, { SKILLS_PVC_NAME: 'skills-pvc' }] as Record<string, string>[]) {
      const p = pod({ thread_id: 't', user_id: 'u', extra_mounts: four }, env);
      expect(volumeNames(p)).toEqual(['user-data', 'extra-0', 'extra-1', 'extra-2', 'extra-3']);
    }
    // One override replaces just the default mount at its path (two would make the Pod invalid).
    const one = pod({ thread_id: 't', user_id: 'u', extra_mounts: [four[1]] });
    expect(volumeNames(one)).toEqual(['skills-public', 'skills-legacy', 'user-data', 'extra-0']);
  });
});

describe('Lark CLI integration', () => {
  const larkMounts = [
    {
      host_path: `${BASE}/users/alice/lark/config`,
      container_path: '/mnt/integrations/lark-cli/config',
      read_only: true,
    },
    {
      host_path: `${BASE}/users/alice/lark/config/locks`,
      container_path: '/mnt/integrations/lark-cli/config/locks',
    },
    {
      host_path: `${BASE}/users/alice/lark/data`,
      container_path: '/mnt/integrations/lark-cli/data',
    },
    {
      host_path: `${BASE}/users/alice/lark/runtime`,
      container_path: '/mnt/integrations/lark-cli/runtime',
    },
  ];
  const init = { LARK_CLI_INIT_IMAGE: 'lark-init:1' };
  const broker = { LARK_CLI_BROKER_IMAGE: 'lark-broker:1' };

  it('§9.5.71 pattern A: an init container only with the image and the flag; emptyDir runtime; config ro before locks rw', () => {
    expect(
      pod({ thread_id: 't', provision_lark_cli_runtime: true }).spec!.initContainers,
    ).toBeUndefined();
    expect(
      pod({ thread_id: 't', user_id: 'alice', extra_mounts: larkMounts }, init).spec!
        .initContainers,
    ).toBeUndefined();
    const p = pod(
      {
        thread_id: 't',
        user_id: 'alice',
        extra_mounts: larkMounts,
        provision_lark_cli_runtime: true,
      },
      init,
    );
    const [initContainer] = p.spec!.initContainers!;
    expect(initContainer!.name).toBe('lark-cli-init');
    expect(initContainer!.image).toBe('lark-init:1');
    expect(volume(p, 'lark-cli-runtime').emptyDir).toEqual({});
    expect(initContainer!.volumeMounts).toEqual([
      {
        name: 'lark-cli-runtime',
        mountPath: '/mnt/integrations/lark-cli/runtime',
        readOnly: false,
      },
    ]);
    expect(mount(p, '/mnt/integrations/lark-cli/runtime')).toEqual({
      name: 'lark-cli-runtime',
      mountPath: '/mnt/integrations/lark-cli/runtime',
      readOnly: true,
    });
    // The gateway's hostPath runtime mount is replaced.
    expect(p.spec!.volumes!.some((v) => v.hostPath?.path.endsWith('/lark/runtime'))).toBe(false);
    const paths = sandboxContainer(p).volumeMounts!.map(
      (m) => `${m.mountPath}:${m.readOnly ? 'ro' : 'rw'}`,
    );
    expect(paths.indexOf('/mnt/integrations/lark-cli/config:ro')).toBeLessThan(
      paths.indexOf('/mnt/integrations/lark-cli/config/locks:rw'),
    );
  });

  it('§9.5.72 pattern B: shim init, broker sidecar holding the credentials, broker URL for the sandbox; supersedes A', () => {
    const p = pod(
      {
        thread_id: 't',
        user_id: 'alice',
        extra_mounts: larkMounts,
        provision_lark_cli_broker: true,
        provision_lark_cli_runtime: true,
      },
      { ...init, ...broker },
    );
    expect(p.spec!.initContainers!.map((c) => c.name)).toEqual(['lark-cli-shim-init']);
    expect(p.spec!.initContainers![0]!.args).toEqual([
      'install-shim',
      '/mnt/integrations/lark-cli/runtime',
    ]);
    const sidecar = p.spec!.containers.find((c) => c.name === 'lark-cli-broker')!;
    expect(sidecar.args).toEqual(['serve']);
    expect(sidecar.volumeMounts!.map((m) => [m.mountPath, m.readOnly])).toEqual([
      ['/var/lark/config', true],
      ['/var/lark/config/locks', false],
      ['/var/lark/data', false],
    ]);
    // The reference images' defaults: where the broker's CLI finds what the sidecar mounts.
    expect(sidecar.env).toEqual([
      { name: 'LARKSUITE_CLI_CONFIG_DIR', value: '/var/lark/config' },
      { name: 'LARKSUITE_CLI_DATA_DIR', value: '/var/lark/data' },
    ]);
    expect(p.spec!.initContainers![0]!.env).toEqual([
      { name: 'LARK_CLI_RUNTIME_DEST', value: '/mnt/integrations/lark-cli/runtime' },
    ]);
    const sandbox = sandboxContainer(p);
    expect(
      sandbox.volumeMounts!.filter((m) => /lark-cli\/(config|data)/.test(m.mountPath)),
    ).toEqual([]);
    expect(sandbox.env).toEqual([
      { name: 'DEERFLOW_LARK_BROKER_URL', value: 'http://127.0.0.1:8788' },
    ]);
    const denied = pod(
      {
        thread_id: 't',
        user_id: 'alice',
        extra_mounts: larkMounts,
        provision_lark_cli_broker: true,
      },
      { ...broker, DEERFLOW_LARK_BROKER_DENY_SUBCOMMANDS: 'auth,logout' },
    );
    expect(denied.spec!.containers.find((c) => c.name === 'lark-cli-broker')!.env).toEqual([
      { name: 'LARKSUITE_CLI_CONFIG_DIR', value: '/var/lark/config' },
      { name: 'LARKSUITE_CLI_DATA_DIR', value: '/var/lark/data' },
      { name: 'DEERFLOW_LARK_BROKER_DENY_SUBCOMMANDS', value: 'auth,logout' },
    ]);
  });

  it('pattern A: the init container is told where to install the runtime (the reference image’s LARK_CLI_RUNTIME_DEST)', () => {
    const p = pod({ thread_id: 't', provision_lark_cli_runtime: true }, init);
    expect(p.spec!.initContainers!.map((c) => [c.name, c.env])).toEqual([
      [
        'lark-cli-init',
        [{ name: 'LARK_CLI_RUNTIME_DEST', value: '/mnt/integrations/lark-cli/runtime' }],
      ],
    ]);
  });

  it('attack: every container — sandbox, init containers and the credential-holding broker — may not escalate and is not privileged', () => {
    const variants = [
      pod({ thread_id: 't' }),
      pod({ thread_id: 't', provision_lark_cli_runtime: true }, init),
      pod(
        {
          thread_id: 't',
          user_id: 'alice',
          extra_mounts: larkMounts,
          provision_lark_cli_broker: true,
        },
        broker,
      ),
      pod(
        {
          thread_id: 't',
          user_id: 'alice',
          extra_mounts: larkMounts,
          provision_lark_cli_broker: true,
        },
        { ...broker, SANDBOX_RUN_AS_USER: '1000', SANDBOX_RUN_AS_GROUP: '1000' },
      ),
    ];
    let seen = 0;
    for (const p of variants) {
      const all = [...p.spec!.containers, ...(p.spec!.initContainers ?? [])];
      const sandboxContext = sandboxContainer(p).securityContext;
      for (const c of all) {
        seen++;
        expect(c.securityContext, c.name).toMatchObject({
          privileged: false,
          allowPrivilegeEscalation: false,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        // Whatever the sandbox container has, every other container has too.
        expect(c.securityContext, c.name).toEqual(sandboxContext);
      }
    }
    expect(seen).toBe(1 + 2 + 3 + 3);
  });
});

describe('the sandbox Pod', () => {
  it('§5.3 container, probes, resources and labels', () => {
    const p = pod({ thread_id: 't' }, { SANDBOX_IMAGE: 'aio:1' });
    const c = sandboxContainer(p);
    expect(p.metadata!.name).toBe('sandbox-abc123');
    expect(p.metadata!.labels).toMatchObject({
      app: 'sbx-sandbox',
      'sandbox-id': 'abc123',
      'app.kubernetes.io/component': 'sandbox',
    });
    expect(c).toMatchObject({
      image: 'aio:1',
      imagePullPolicy: 'IfNotPresent',
      ports: [{ name: 'http', containerPort: 8080 }],
    });
    expect(c.readinessProbe).toEqual({
      httpGet: { path: '/v1/sandbox', port: 'http' },
      initialDelaySeconds: 5,
      periodSeconds: 5,
      timeoutSeconds: 3,
      failureThreshold: 3,
    });
    expect(c.livenessProbe).toMatchObject({ initialDelaySeconds: 10, periodSeconds: 10 });
    expect(c.resources).toEqual({
      requests: { cpu: '100m', memory: '256Mi', 'ephemeral-storage': '500Mi' },
      limits: { cpu: '1000m', memory: '1Gi', 'ephemeral-storage': '500Mi' },
    });
    expect(p.spec!.restartPolicy).toBe('Always');
  });

  it('is hardened beyond the reference: no escalation, RuntimeDefault seccomp, no service-account token, no service links', () => {
    const p = pod({ thread_id: 't' });
    expect(sandboxContainer(p).securityContext).toEqual({
      privileged: false,
      allowPrivilegeEscalation: false,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(p.spec!.automountServiceAccountToken).toBe(false);
    expect(p.spec!.enableServiceLinks).toBe(false);
    const nonRoot = pod(
      { thread_id: 't' },
      { SANDBOX_RUN_AS_USER: '1000', SANDBOX_RUN_AS_GROUP: '1000', SANDBOX_MEMORY_LIMIT: '4Gi' },
    );
    expect(sandboxContainer(nonRoot).securityContext).toMatchObject({
      runAsUser: 1000,
      runAsGroup: 1000,
      runAsNonRoot: true,
    });
    expect(sandboxContainer(nonRoot).resources!.limits!.memory).toBe('4Gi');
  });
});

describe('the sandbox Service', () => {
  it('§9.5.77 NodePort: port = targetPort = 8080, URL http://<NODE_HOST>:<nodePort of "http">', () => {
    const s = resolveProvisionerSettings({ env: { NODE_HOST: 'node.example' } });
    const service = sandboxService(s, 'abc123');
    expect(service.spec).toMatchObject({
      type: 'NodePort',
      selector: { 'sandbox-id': 'abc123' },
      ports: [{ name: 'http', port: 8080, targetPort: 8080, protocol: 'TCP' }],
    });
    expect(accessUrl(s, service)).toBeUndefined(); // no node port assigned yet
    const assigned = {
      ...service,
      spec: { ...service.spec, ports: [{ ...service.spec!.ports![0]!, nodePort: 32123 }] },
    };
    expect(accessUrl(s, assigned)).toBe('http://node.example:32123');
    const clusterIp = resolveProvisionerSettings({
      env: { SANDBOX_SERVICE_TYPE: 'ClusterIP', K8S_NAMESPACE: 'mdv-sit' },
    });
    expect(accessUrl(clusterIp, sandboxService(clusterIp, 'abc123'))).toBe(
      'http://sandbox-abc123-svc.mdv-sit.svc.cluster.local:8080',
    );
  });
});
