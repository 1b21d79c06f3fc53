import { parseSandboxConfig } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { resolveAioSettings, validateConfigBlock } from './aio-provider-config.js';
import { DEFAULT_CONTAINER_RESOURCES, DEFAULT_SECURITY_PROFILE } from './container-profile.js';

const config = (aio: Record<string, unknown>) =>
  parseSandboxConfig({ use: '@sbx/aio', aio }, { env: {} });

describe('sandbox.aio.limits and sandbox.aio.security', () => {
  it('default to non-zero limits and the hardened profile', () => {
    const settings = resolveAioSettings(config({}), {});
    expect(settings.resources).toEqual(DEFAULT_CONTAINER_RESOURCES);
    expect(settings.resources.memoryMb).toBeGreaterThan(0);
    expect(settings.security).toEqual(DEFAULT_SECURITY_PROFILE);
    expect(settings.security.seccomp).toBe('default');
  });

  it('read every field, and report each bad one at its key path', () => {
    const settings = resolveAioSettings(
      config({
        limits: { memory_mb: 512, cpus: 0.5, pids: 200, disk_gb: 8 },
        security: {
          seccomp: 'unconfined',
          cap_add: ['NET_RAW'],
          no_new_privileges: false,
          read_only_root: true,
          tmpfs: ['/scratch'],
          user: '1000:1000',
        },
      }),
      {},
    );
    expect(settings.resources).toEqual({ memoryMb: 512, cpus: 0.5, pids: 200, diskGb: 8 });
    expect(settings.security).toEqual({
      seccomp: 'unconfined',
      capAdd: ['NET_RAW'],
      noNewPrivileges: false,
      readOnlyRoot: true,
      tmpfs: ['/scratch'],
      user: '1000:1000',
    });
    expect(
      validateConfigBlock(
        config({
          limits: { memory_mb: 10, cpus: 0, pids: 'many', memroy_mb: 1 },
          security: { seccomp: 'off', cap_add: ['net raw'], read_only_root: 'yes' },
        }),
        {},
      ),
    ).toEqual([
      {
        path: 'sandbox.aio.limits.memroy_mb',
        message: 'unknown key (known: memory_mb, cpus, pids, disk_gb)',
      },
      { path: 'sandbox.aio.limits.memory_mb', message: 'must be an integer >= 64' },
      { path: 'sandbox.aio.limits.cpus', message: 'must be a number >= 0.01' },
      { path: 'sandbox.aio.limits.pids', message: 'must be an integer >= 16' },
      { path: 'sandbox.aio.security.seccomp', message: "must be 'default' or 'unconfined'" },
      {
        path: 'sandbox.aio.security.cap_add',
        message: 'must be a list of capability names (e.g. NET_RAW)',
      },
      { path: 'sandbox.aio.security.read_only_root', message: 'must be true or false' },
    ]);
  });
});
