import { ConfigError, parseSandboxConfig } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SANDBOX_LIFETIME_SECONDS,
  connectionWarnings,
  effectiveEndpoint,
  resolveOpenSandboxSettings,
} from './opensandbox-config.js';

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('resolveOpenSandboxSettings', () => {
  it('applies the documented defaults', () => {
    expect(resolveOpenSandboxSettings({})).toEqual({
      apiKey: undefined,
      domain: undefined,
      protocol: 'http',
      requestTimeoutSeconds: 30,
      readyTimeoutSeconds: 30,
      useServerProxy: false,
      disableMetrics: false,
      image: 'python:3.11',
      lifetimeSeconds: 14_400,
      commandTimeoutSeconds: 600,
      replicas: 3,
      idleTimeoutSeconds: 600,
      idleCheckIntervalSeconds: 60,
      environment: {},
    });
  });

  it('§8.8.166 sandbox_timeout: null uses the 4 h default; 0 is explicit cleanup', () => {
    expect(
      resolveOpenSandboxSettings({ opensandbox: { sandbox_timeout: null } }).lifetimeSeconds,
    ).toBe(DEFAULT_SANDBOX_LIFETIME_SECONDS);
    expect(DEFAULT_SANDBOX_LIFETIME_SECONDS).toBe(4 * 3600);
    expect(
      resolveOpenSandboxSettings({ opensandbox: { sandbox_timeout: 0 } }).lifetimeSeconds,
    ).toBeNull();
    expect(
      resolveOpenSandboxSettings({ opensandbox: { sandbox_timeout: 90 } }).lifetimeSeconds,
    ).toBe(90);
  });

  it('rejects a negative sandbox_timeout', () => {
    const err = configError(() =>
      resolveOpenSandboxSettings({ opensandbox: { sandbox_timeout: -1 } }),
    );
    expect(err.issues.map((i) => i.path)).toEqual(['sandbox.opensandbox.sandbox_timeout']);
  });

  it('rejects non-positive timeouts with "must be positive", reporting every problem at once', () => {
    const err = configError(() =>
      resolveOpenSandboxSettings({
        opensandbox: { request_timeout: 0, ready_timeout: -5 },
        bashCommandTimeout: 0,
      }),
    );
    expect(err.issues.map((i) => i.path)).toEqual([
      'sandbox.opensandbox.request_timeout',
      'sandbox.opensandbox.ready_timeout',
      'sandbox.bash_command_timeout',
    ]);
    expect(err.issues.every((i) => i.message.startsWith('must be positive'))).toBe(true);
  });

  it('rejects unknown keys, a bad protocol and wrongly typed values instead of defaulting', () => {
    const err = configError(() =>
      resolveOpenSandboxSettings({
        opensandbox: { domian: 'x', protocol: 'ftp', use_server_proxy: 'yes', api_key: '' },
      }),
    );
    expect(err.issues.map((i) => i.path).sort()).toEqual([
      'sandbox.opensandbox.api_key',
      'sandbox.opensandbox.domian',
      'sandbox.opensandbox.protocol',
      'sandbox.opensandbox.use_server_proxy',
    ]);
  });

  it('rejects environment keys that are not POSIX names', () => {
    const err = configError(() => resolveOpenSandboxSettings({ environment: { 'A-B': 'x' } }));
    expect(err.issues[0]?.path).toBe('sandbox.environment');
    expect(err.issues[0]?.message).toContain('POSIX');
  });

  it('reads a parsed sbx configuration, including the reference flat keys moved into the block', () => {
    const config = parseSandboxConfig(
      {
        use: 'deerflow.community.opensandbox:OpenSandboxProvider',
        api_key: '$OS_KEY',
        domain: 'sandbox.example.com',
        protocol: 'https',
        sandbox_timeout: null,
        image: 'ubuntu:24.04',
        replicas: 5,
        idle_timeout: 0,
        environment: { TOKEN: '$HOST_TOKEN', MISSING: '$NOT_SET' },
      },
      { env: { OS_KEY: 'secret', HOST_TOKEN: 'tok' } },
    );
    const s = resolveOpenSandboxSettings(config);
    expect(s).toMatchObject({
      apiKey: 'secret',
      domain: 'sandbox.example.com',
      protocol: 'https',
      lifetimeSeconds: 14_400,
      image: 'ubuntu:24.04',
      replicas: 5,
      idleTimeoutSeconds: 0,
      environment: { TOKEN: 'tok', MISSING: '' },
    });
  });
});

describe('connectionWarnings', () => {
  it('§8.8.165 no key and no domain anywhere warns about an unauthenticated localhost:8080', () => {
    const warnings = connectionWarnings(
      { apiKey: undefined, domain: undefined, protocol: 'http' },
      {},
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('unauthenticated localhost:8080');
  });

  it('the SDK environment variables count as configured', () => {
    const s = { apiKey: undefined, domain: undefined, protocol: 'http' as const };
    expect(connectionWarnings(s, { OPEN_SANDBOX_API_KEY: 'k' })).toEqual([]);
    expect(connectionWarnings(s, { OPEN_SANDBOX_DOMAIN: 'localhost:9000' })).toEqual([]);
  });

  it('§8.8.165 a remote plain-HTTP domain warns, without the key in the message', () => {
    const warnings = connectionWarnings(
      { apiKey: 'super-secret-key', domain: 'sandbox.example.com', protocol: 'http' },
      {},
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('remote OpenSandbox domain uses HTTP');
    expect(warnings.join(' ')).not.toContain('super-secret-key');
  });

  it('§8.8.164 an HTTPS or loopback domain gives no warning', () => {
    const key = { apiKey: 'k' };
    expect(
      connectionWarnings({ ...key, domain: 'sandbox.example.com', protocol: 'https' }, {}),
    ).toEqual([]);
    for (const domain of ['localhost:8080', '127.0.0.1:8080', '[::1]:8080', 'http://127.0.0.2']) {
      expect(connectionWarnings({ ...key, domain, protocol: 'http' }, {})).toEqual([]);
    }
  });

  it('a scheme in the domain wins over protocol, as in the SDK', () => {
    expect(effectiveEndpoint('https://sandbox.example.com/prefix', 'http')).toEqual({
      protocol: 'https',
      host: 'sandbox.example.com',
    });
    expect(
      connectionWarnings(
        { apiKey: 'k', domain: 'http://sandbox.example.com', protocol: 'https' },
        {},
      ),
    ).toHaveLength(1);
    expect(
      connectionWarnings(
        { apiKey: 'k', domain: 'https://sandbox.example.com', protocol: 'http' },
        {},
      ),
    ).toEqual([]);
  });
});
