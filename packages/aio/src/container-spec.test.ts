import { describe, expect, it } from 'vitest';
import { buildContainerSpec, describeContainerSpec } from './container-spec.js';
import type { ContainerSpecInput } from './container-spec.js';
import { DEFAULT_SECURITY_PROFILE } from './container-profile.js';

const base: ContainerSpecInput = {
  name: 'sbx-sandbox-abc',
  sandboxId: 'abc',
  image: 'img:1',
  port: 18080,
  network: 'bridge',
  bindHost: '127.0.0.1',
  environment: { API_KEY: 'secret', PLAIN: 'x' },
  mounts: [],
  skillsRoot: '/mnt/skills',
};

describe('buildContainerSpec', () => {
  // §4.4 pins seccomp=unconfined; sbx runs with the engine's default profile, dropped
  // capabilities, no-new-privileges and limits, and keeps unconfined as an explicit opt-out.
  it('§4.4 (changed) hardened and limited by default, auto-removed, with env, labels and the port published on the bind host', () => {
    const spec = buildContainerSpec(base);
    expect(spec.name).toBe('sbx-sandbox-abc');
    expect(spec.HostConfig.SecurityOpt).toEqual(['no-new-privileges:true']);
    expect(spec.HostConfig).toMatchObject({
      Memory: 4096 * 1024 * 1024,
      MemorySwap: 4096 * 1024 * 1024,
      NanoCpus: 2e9,
      PidsLimit: 1024,
      CapDrop: ['ALL'],
      ReadonlyRootfs: false,
    });
    expect(spec.HostConfig.CapAdd).toContain('SETUID');
    expect(spec.HostConfig.CapAdd).not.toContain('NET_RAW');
    const optedOut = buildContainerSpec({
      ...base,
      security: { ...DEFAULT_SECURITY_PROFILE, seccomp: 'unconfined', noNewPrivileges: false },
    });
    expect(optedOut.HostConfig.SecurityOpt).toEqual(['seccomp=unconfined']);
    const readOnly = buildContainerSpec({
      ...base,
      resources: { memoryMb: 128, cpus: 0.5, pids: 64, diskGb: 5 },
      security: { ...DEFAULT_SECURITY_PROFILE, readOnlyRoot: true, user: '1000:1000' },
    });
    expect(readOnly.HostConfig).toMatchObject({
      Memory: 128 * 1024 * 1024,
      NanoCpus: 5e8,
      PidsLimit: 64,
      ReadonlyRootfs: true,
      StorageOpt: { size: '5G' },
      Tmpfs: {
        '/tmp': 'rw,nosuid,nodev',
        '/run': 'rw,nosuid,nodev',
        '/var/tmp': 'rw,nosuid,nodev',
      },
    });
    expect(readOnly.User).toBe('1000:1000');
    expect(describeContainerSpec(readOnly)).toContain(
      '--memory 134217728b --memory-swap 134217728b --cpus 0.5 --pids-limit 64 --cap-drop ALL',
    );
    expect(spec.HostConfig.AutoRemove).toBe(true);
    expect(spec.Env).toEqual(['API_KEY=secret', 'PLAIN=x']);
    expect(spec.Labels).toEqual({
      'sbx.managed': 'true',
      'sbx.sandbox-id': 'abc',
      'sbx.port': '18080',
      'sbx.skills-root': '/mnt/skills',
    });
    expect(spec.HostConfig.PortBindings).toEqual({
      '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '18080' }],
    });
  });

  it('§9.3.37 publishes on 0.0.0.0 for a DooD host and on ::1 for IPv6 loopback', () => {
    expect(buildContainerSpec({ ...base, bindHost: '0.0.0.0' }).HostConfig.PortBindings).toEqual({
      '8080/tcp': [{ HostIp: '0.0.0.0', HostPort: '18080' }],
    });
    expect(buildContainerSpec({ ...base, bindHost: '[::1]' }).HostConfig.PortBindings).toEqual({
      '8080/tcp': [{ HostIp: '::1', HostPort: '18080' }],
    });
    expect(describeContainerSpec(buildContainerSpec({ ...base, bindHost: '[::1]' }))).toContain(
      '-p [::1]:18080:8080',
    );
  });

  it('§9.3.31 §9.3.32 keeps Windows drive letters in bind sources and marks read-only mounts', () => {
    const spec = buildContainerSpec({
      ...base,
      mounts: [
        { hostPath: 'D:/deer-flow/threads', containerPath: '/mnt/threads', readOnly: false },
        { hostPath: '/srv/skills', containerPath: '/mnt/skills/public/', readOnly: true },
      ],
    });
    expect(spec.HostConfig.Mounts).toEqual([
      { Type: 'bind', Source: 'D:/deer-flow/threads', Target: '/mnt/threads', ReadOnly: false },
      { Type: 'bind', Source: '/srv/skills', Target: '/mnt/skills/public/', ReadOnly: true },
    ]);
    const line = describeContainerSpec(spec);
    expect(line).toContain('--mount type=bind,src=D:/deer-flow/threads,dst=/mnt/threads ');
    expect(line).toContain('dst=/mnt/skills/public/,readonly');
  });

  it('host network: no published port, the port is passed as SBX_AIO_PORT', () => {
    const spec = buildContainerSpec({ ...base, network: 'host' });
    expect(spec.HostConfig.NetworkMode).toBe('host');
    expect(spec.HostConfig.PortBindings).toBeUndefined();
    expect(spec.Env).toContain('SBX_AIO_PORT=18080');
  });
});

describe('describeContainerSpec', () => {
  it('§9.3.33 §9.3.35 shows env names but never values; the spec itself keeps the values', () => {
    const spec = buildContainerSpec({ ...base, environment: { API_KEY: 'secret', TOKEN: 'x=y' } });
    const line = describeContainerSpec(spec);
    expect(line).toContain('-e API_KEY=<redacted>');
    expect(line).toContain('-e TOKEN=<redacted>');
    expect(line).not.toContain('secret');
    expect(line).not.toContain('x=y');
    expect(spec.Env).toContain('API_KEY=secret');
  });

  it('§9.3.34 quotes arguments with spaces', () => {
    expect(describeContainerSpec(buildContainerSpec({ ...base, name: 'sandbox one' }))).toContain(
      "--name 'sandbox one'",
    );
  });
});
