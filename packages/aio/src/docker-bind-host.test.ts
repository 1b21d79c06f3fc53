import { describe, expect, it } from 'vitest';
import { resolveDockerBindHost, resolveSandboxHost } from './docker-bind-host.js';

describe('resolveDockerBindHost', () => {
  it('§9.3.36 binds loopback by default and logs why', () => {
    const lines: string[] = [];
    const logger = { debug: (m: string) => lines.push(m), info() {}, warn() {}, error() {} };
    expect(resolveDockerBindHost({ env: {}, logger })).toBe('127.0.0.1');
    expect(lines).toContain('Docker sandbox bind: 127.0.0.1 (loopback default)');
  });

  it('§9.3.36 binds 0.0.0.0 for a non-loopback sandbox host (gateway in a container)', () => {
    expect(resolveDockerBindHost({ env: { DEER_FLOW_SANDBOX_HOST: 'host.docker.internal' } })).toBe(
      '0.0.0.0',
    );
    expect(resolveDockerBindHost({ env: { SBX_SANDBOX_HOST: 'host.docker.internal' } })).toBe(
      '0.0.0.0',
    );
  });

  it('§9.3.36 keeps IPv6 loopback and lets an explicit bind address win', () => {
    expect(resolveDockerBindHost({ env: { SBX_SANDBOX_HOST: '[::1]' } })).toBe('[::1]');
    expect(resolveDockerBindHost({ env: { SBX_SANDBOX_HOST: '::1' } })).toBe('[::1]');
    expect(
      resolveDockerBindHost({
        env: { DEER_FLOW_SANDBOX_BIND_HOST: '192.0.2.10', SBX_SANDBOX_HOST: 'localhost' },
      }),
    ).toBe('192.0.2.10');
    expect(resolveDockerBindHost({ env: {}, bindHost: ' 127.0.0.2 ' })).toBe('127.0.0.2');
  });

  it('resolves the URL host from the option, then SBX_SANDBOX_HOST, then the reference name', () => {
    expect(resolveSandboxHost(undefined, {})).toBe('localhost');
    expect(resolveSandboxHost(undefined, { DEER_FLOW_SANDBOX_HOST: 'a' })).toBe('a');
    expect(
      resolveSandboxHost(undefined, { DEER_FLOW_SANDBOX_HOST: 'a', SBX_SANDBOX_HOST: 'b' }),
    ).toBe('b');
    expect(resolveSandboxHost('c', { SBX_SANDBOX_HOST: 'b' })).toBe('c');
  });
});
