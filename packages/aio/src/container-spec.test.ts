import { describe, expect, it } from 'vitest';
import { buildContainerSpec, describeContainerSpec } from './container-spec.js';
import type { ContainerSpecInput } from './container-spec.js';

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
  it('§4.4 runs unconfined, auto-removed, with env, labels and the port published on the bind host', () => {
    const spec = buildContainerSpec(base);
    expect(spec.name).toBe('sbx-sandbox-abc');
    expect(spec.HostConfig.SecurityOpt).toEqual(['seccomp=unconfined']);
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
