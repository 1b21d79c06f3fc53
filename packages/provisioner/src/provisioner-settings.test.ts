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
