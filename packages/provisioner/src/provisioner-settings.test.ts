import { isSbxError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PROVISIONER_SETTINGS,
  resolveProvisionerSettings,
} from './provisioner-settings.js';

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(isSbxError(err) && err.code).toBe('CONFIG_INVALID');
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('provisioner settings', () => {
  it('defaults, with the host base derived from a threads directory named "threads"', () => {
    const s = resolveProvisionerSettings();
    expect(s).toMatchObject({
      namespace: 'sbx',
      containerPort: 8080,
      serviceType: 'NodePort',
      apiKey: '',
      listenPort: 8002,
    });
    expect(s.hostBaseDir).toBe('/var/lib/sbx');
    expect(
      resolveProvisionerSettings({
        env: { THREADS_HOST_PATH: '/srv/data', USERDATA_PVC_NAME: 'data' },
      }).hostBaseDir,
    ).toBe('');
    expect(
      resolveProvisionerSettings({
        env: { THREADS_HOST_PATH: '/srv/x/threads', DEER_FLOW_HOST_BASE_DIR: '/srv' },
      }).hostBaseDir,
    ).toBe('/srv');
  });

  it('§5.2 the container port must be an integer in 1..65535 and the service type NodePort or ClusterIP', () => {
    for (const port of ['0', '65536', 'http', '80.5', '']) {
      expect(
        configError(() => resolveProvisionerSettings({ env: { SANDBOX_CONTAINER_PORT: port } })),
      ).toContain('SANDBOX_CONTAINER_PORT');
    }
    expect(
      resolveProvisionerSettings({ env: { SANDBOX_CONTAINER_PORT: '9000' } }).containerPort,
    ).toBe(9000);
    expect(
      configError(() =>
        resolveProvisionerSettings({ env: { SANDBOX_SERVICE_TYPE: 'LoadBalancer' } }),
      ),
    ).toContain('SANDBOX_SERVICE_TYPE');
    expect(
      resolveProvisionerSettings({ env: { SANDBOX_SERVICE_TYPE: 'ClusterIP' } }).serviceType,
    ).toBe('ClusterIP');
  });

  it('reads the config file block, and the environment wins over it', () => {
    const file = {
      namespace: 'sandboxes',
      api_key: 'from-file',
      requests: { memory: '512Mi' },
      listen_port: 9100,
    };
    const s = resolveProvisionerSettings({ file, env: { PROVISIONER_API_KEY: 'from-env' } });
    expect(s).toMatchObject({ namespace: 'sandboxes', apiKey: 'from-env', listenPort: 9100 });
    expect(s.requests).toEqual({ ...DEFAULT_PROVISIONER_SETTINGS.requests, memory: '512Mi' });
    expect(configError(() => resolveProvisionerSettings({ file: { namespcae: 'x' } }))).toContain(
      'provisioner.namespcae',
    );
  });

  it('refuses values that would only fail at the first create', () => {
    expect(
      configError(() => resolveProvisionerSettings({ env: { K8S_NAMESPACE: 'Bad_NS' } })),
    ).toContain('K8S_NAMESPACE');
    expect(
      configError(() => resolveProvisionerSettings({ env: { SANDBOX_MEMORY_LIMIT: 'lots' } })),
    ).toContain('SANDBOX_MEMORY_LIMIT');
    expect(
      configError(() =>
        resolveProvisionerSettings({ env: { SKILLS_PVC_SUBPATH_TEMPLATE: '{user}/skills' } }),
      ),
    ).toContain('{user}');
    expect(
      configError(() =>
        resolveProvisionerSettings({ env: { THREADS_HOST_PATH: 'relative/threads' } }),
      ),
    ).toContain('THREADS_HOST_PATH');
    expect(
      configError(() =>
        resolveProvisionerSettings({ env: { USERDATA_PVC_SUBPATH_PREFIX: '../up' } }),
      ),
    ).toContain('USERDATA_PVC_SUBPATH_PREFIX');
  });

  it('hostPath user data needs a host base, and the former threads directory lies strictly below it', () => {
    // Without a base, user data would have no per-user place: refused at start-up, not per create.
    expect(
      configError(() => resolveProvisionerSettings({ env: { THREADS_HOST_PATH: '/srv/data' } })),
    ).toContain('SBX_HOST_BASE_DIR');
    for (const [threads, base] of [
      ['/srv/sbx', '/srv/sbx'],
      ['/srv/sbx/', '/srv/sbx'],
      ['/srv', '/srv/sbx'],
    ]) {
      expect(
        configError(() =>
          resolveProvisionerSettings({
            env: { THREADS_HOST_PATH: threads!, SBX_HOST_BASE_DIR: base! },
          }),
        ),
      ).toContain('THREADS_HOST_PATH');
    }
    expect(
      resolveProvisionerSettings({
        env: { THREADS_HOST_PATH: '/srv/old-threads', SBX_HOST_BASE_DIR: '/srv/sbx' },
      }).hostBaseDir,
    ).toBe('/srv/sbx');
  });

  it('seconds settings become milliseconds; an empty API server is none', () => {
    const s = resolveProvisionerSettings({
      env: {
        SANDBOX_DELETE_TIMEOUT_SECONDS: '5',
        SANDBOX_GC_INTERVAL_SECONDS: '0',
        K8S_API_SERVER: '',
      },
    });
    expect(s).toMatchObject({ deleteTimeoutMs: 5000, gcIntervalMs: 0, apiServer: undefined });
  });
});

describe('settings a real API server would refuse stop the start-up, naming the setting', () => {
  it('SANDBOX_CPU_REQUEST=2 is above the default 1000m limit', () => {
    const msg = configError(() =>
      resolveProvisionerSettings({ env: { SANDBOX_CPU_REQUEST: '2' } }),
    );
    expect(msg).toContain('SANDBOX_CPU_REQUEST');
    expect(msg).toContain('must be less than or equal to SANDBOX_CPU_LIMIT');
  });

  it('SANDBOX_MEMORY_REQUEST=2Gi is above the default 1Gi limit', () => {
    const msg = configError(() =>
      resolveProvisionerSettings({ env: { SANDBOX_MEMORY_REQUEST: '2Gi' } }),
    );
    expect(msg).toContain('SANDBOX_MEMORY_REQUEST');
    expect(msg).toContain('SANDBOX_MEMORY_LIMIT');
  });

  it('SANDBOX_EPHEMERAL_STORAGE_REQUEST=1Gi is above the default 500Mi limit', () => {
    const msg = configError(() =>
      resolveProvisionerSettings({ env: { SANDBOX_EPHEMERAL_STORAGE_REQUEST: '1Gi' } }),
    );
    expect(msg).toContain('SANDBOX_EPHEMERAL_STORAGE_REQUEST');
  });

  it('SANDBOX_MEMORY_LIMIT=0 limits to nothing: the 256Mi request is above it', () => {
    const msg = configError(() =>
      resolveProvisionerSettings({ env: { SANDBOX_MEMORY_LIMIT: '0' } }),
    );
    expect(msg).toContain('SANDBOX_MEMORY_LIMIT');
    expect(msg).toContain('limit of 0 limits to nothing');
    // With the request 0 too, the server accepts it, and so do the settings.
    expect(
      resolveProvisionerSettings({
        env: { SANDBOX_MEMORY_LIMIT: '0', SANDBOX_MEMORY_REQUEST: '0' },
      }).limits.memory,
    ).toBe('0');
  });

  it('raising the limit with the request is fine, compared exactly across suffixes', () => {
    const s = resolveProvisionerSettings({
      env: {
        SANDBOX_CPU_REQUEST: '2',
        SANDBOX_CPU_LIMIT: '2000m',
        SANDBOX_MEMORY_REQUEST: '1Gi',
        SANDBOX_MEMORY_LIMIT: '1024Mi',
      },
    });
    expect(s.requests.cpu).toBe('2');
  });

  it('quantity syntax and sign follow the server: 1K, 1e, -1 are refused with the setting named', () => {
    for (const [name, value] of [
      ['SANDBOX_CPU_LIMIT', '1K'],
      ['SANDBOX_MEMORY_LIMIT', '1e'],
      ['SANDBOX_CPU_REQUEST', '-1'],
    ] as const) {
      expect(configError(() => resolveProvisionerSettings({ env: { [name]: value } }))).toContain(
        name,
      );
    }
    expect(resolveProvisionerSettings({ env: { SANDBOX_CPU_LIMIT: '1.5e0' } }).limits.cpu).toBe(
      '1.5e0',
    );
  });

  it('the config file’s keys are named when they are the ones set', () => {
    const msg = configError(() =>
      resolveProvisionerSettings({ file: { limits: { memory: '0' } } }),
    );
    expect(msg).toContain('sandbox.provisioner.limits.memory');
  });

  it('overrides from code are checked too', () => {
    const msg = configError(() =>
      resolveProvisionerSettings({
        overrides: { requests: { cpu: '4', memory: '1Mi', ephemeralStorage: '1Mi' } },
      }),
    );
    expect(msg).toContain('SANDBOX_CPU_REQUEST');
  });

  it('the namespace must be a DNS-1123 label', () => {
    expect(
      configError(() => resolveProvisionerSettings({ env: { K8S_NAMESPACE: 'a'.repeat(64) } })),
    ).toContain('K8S_NAMESPACE');
  });
});

describe('runtime class and lifetime bound', () => {
  it('SANDBOX_RUNTIME_CLASS_NAME must be a RuntimeClass name (DNS-1123 subdomain)', () => {
    expect(
      resolveProvisionerSettings({ env: { SANDBOX_RUNTIME_CLASS_NAME: 'kata-qemu' } })
        .runtimeClassName,
    ).toBe('kata-qemu');
    for (const bad of ['gVisor', 'run_sc', '-x', 'a'.repeat(254)]) {
      expect(
        configError(() => resolveProvisionerSettings({ env: { SANDBOX_RUNTIME_CLASS_NAME: bad } })),
      ).toContain('SANDBOX_RUNTIME_CLASS_NAME');
    }
  });

  it('SANDBOX_ACTIVE_DEADLINE_SECONDS is 0 (none) or 1..2147483647', () => {
    expect(
      resolveProvisionerSettings({ env: { SANDBOX_ACTIVE_DEADLINE_SECONDS: '3600' } })
        .activeDeadlineSeconds,
    ).toBe(3600);
    for (const bad of ['-1', '2147483648', '1.5', 'day']) {
      expect(
        configError(() =>
          resolveProvisionerSettings({ env: { SANDBOX_ACTIVE_DEADLINE_SECONDS: bad } }),
        ),
      ).toContain('SANDBOX_ACTIVE_DEADLINE_SECONDS');
    }
    expect(
      configError(() => resolveProvisionerSettings({ overrides: { activeDeadlineSeconds: -5 } })),
    ).toContain('SANDBOX_ACTIVE_DEADLINE_SECONDS');
  });
});

describe('names the API server checks', () => {
  it('PVC names must be DNS-1123 subdomains, named in the error', () => {
    for (const name of ['SKILLS_PVC_NAME', 'USERDATA_PVC_NAME'] as const) {
      expect(
        configError(() => resolveProvisionerSettings({ env: { [name]: 'User_Data' } })),
      ).toContain(name);
    }
    expect(
      resolveProvisionerSettings({ env: { USERDATA_PVC_NAME: 'sbx.user-data' } }).userDataPvcName,
    ).toBe('sbx.user-data');
  });
});

describe('the egress proxy', () => {
  it('SANDBOX_EGRESS_PROXY is <service>:<port>, a Service of the sandbox namespace', () => {
    expect(DEFAULT_PROVISIONER_SETTINGS.egressProxy).toBe('');
    expect(
      resolveProvisionerSettings({ env: { SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128' } })
        .egressProxy,
    ).toBe('sbx-egress-proxy:3128');
    expect(resolveProvisionerSettings({ file: { egress_proxy: 'proxy:8080' } }).egressProxy).toBe(
      'proxy:8080',
    );
    for (const bad of [
      'sbx-egress-proxy',
      ':3128',
      'proxy:0',
      'proxy:65536',
      'proxy:31x',
      'Proxy:3128',
      'proxy.other-ns:3128',
      '10.0.0.1:3128',
      `${'p'.repeat(64)}:3128`,
    ]) {
      expect(
        configError(() => resolveProvisionerSettings({ env: { SANDBOX_EGRESS_PROXY: bad } })),
      ).toContain('SANDBOX_EGRESS_PROXY');
    }
  });

  it('is refused with the agent-sandbox backend, which makes no per-sandbox NetworkPolicy', () => {
    expect(
      configError(() =>
        resolveProvisionerSettings({
          env: { SANDBOX_EGRESS_PROXY: 'sbx-egress-proxy:3128', SANDBOX_BACKEND: 'agent-sandbox' },
        }),
      ),
    ).toMatch(/SANDBOX_EGRESS_PROXY.*pods backend only/);
  });
});
