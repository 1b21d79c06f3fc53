import { ConfigError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import {
  authorizationConfigFromDocument,
  parseAuthorizationConfig,
  parseAuthorizationConfigYaml,
} from './authorization-config.js';

function issuesOf(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).issues];
  }
  throw new Error('expected a ConfigError');
}

describe('parseAuthorizationConfig', () => {
  it('defaults: disabled, fail closed, default role "user", no provider', () => {
    for (const section of [undefined, null, {}]) {
      expect(parseAuthorizationConfig(section)).toEqual({
        enabled: false,
        failClosed: true,
        defaultRole: 'user',
      });
    }
  });

  it('maps snake_case YAML to camelCase and passes provider config verbatim', () => {
    const roles = { guest: { sandbox: { allow: [] }, mcp_servers: { allow: ['x'] } } };
    expect(
      parseAuthorizationConfig({
        enabled: true,
        fail_closed: false,
        default_role: 'guest',
        provider: { use: 'my-authz#Provider', config: { roles } },
      }),
    ).toEqual({
      enabled: true,
      failClosed: false,
      defaultRole: 'guest',
      provider: { use: 'my-authz#Provider', config: { roles } },
    });
  });

  it('provider.use may be omitted (built-in RBAC) and an empty config is {}', () => {
    expect(
      parseAuthorizationConfig({ enabled: true, provider: { config: null } }).provider,
    ).toEqual({ config: {} });
  });

  it('enabled without a provider is a ConfigError at authorization.provider', () => {
    expect(issuesOf(() => parseAuthorizationConfig({ enabled: true }))).toEqual([
      {
        path: 'authorization.provider',
        message: expect.stringContaining('no provider is configured') as string,
      },
    ]);
  });

  it('disabled config may omit the provider', () => {
    expect(parseAuthorizationConfig({ enabled: false }).provider).toBeUndefined();
  });

  it('reports every bad key with its path', () => {
    const issues = issuesOf(() =>
      parseAuthorizationConfig({
        enabled: 'yes',
        fail_closed: 0,
        default_role: '',
        provider: { use: '', config: ['x'], extra: 1 },
        fail_open: true,
      }),
    );
    const paths = issues.map((i) => i.path).sort();
    expect(paths).toEqual(
      [
        'authorization.enabled',
        'authorization.fail_closed',
        'authorization.default_role',
        'authorization.provider.use',
        'authorization.provider.config',
        'authorization.provider.extra',
        'authorization.fail_open',
      ].sort(),
    );
    expect(issues.find((i) => i.path === 'authorization.fail_open')?.message).toMatch(
      /write fail_closed: false/,
    );
  });

  it('camelCase keys in YAML are unknown keys with a hint', () => {
    expect(issuesOf(() => parseAuthorizationConfig({ failClosed: false }))).toEqual([
      {
        path: 'authorization.failClosed',
        message: 'unknown key; configuration keys are snake_case',
      },
    ]);
  });

  it('uses a caller-supplied key path prefix', () => {
    expect(issuesOf(() => parseAuthorizationConfig({ enabled: 1 }, 'app.authz'))[0]?.path).toBe(
      'app.authz.enabled',
    );
  });

  it('the error message lists the paths', () => {
    expect(() => parseAuthorizationConfig({ enabled: 1 })).toThrow(
      /Invalid authorization configuration:\n {2}- authorization\.enabled: /,
    );
  });
});

describe('YAML documents', () => {
  it('reads the authorization section of a whole config file', () => {
    const config = parseAuthorizationConfigYaml(`
sandbox:
  use: local
authorization:
  enabled: true
  fail_closed: true
  default_role: user
  provider:
    use: "@sbx/authz#RbacAuthorizationProvider"
    config:
      roles:
        admin: {tools: {allow: "*"}, sandbox: {allow: "*"}}
        user: {tools: {allow: "*", deny: [update_agent]}}
        guest: {tools: {allow: [web_search, read_file]}, sandbox: {allow: []}}
`);
    expect(config.enabled).toBe(true);
    expect(config.provider?.use).toBe('@sbx/authz#RbacAuthorizationProvider');
    expect(config.provider?.config).toEqual({
      roles: {
        admin: { tools: { allow: '*' }, sandbox: { allow: '*' } },
        user: { tools: { allow: '*', deny: ['update_agent'] } },
        guest: { tools: { allow: ['web_search', 'read_file'] }, sandbox: { allow: [] } },
      },
    });
  });

  it('a document without the section means authorization disabled', () => {
    expect(parseAuthorizationConfigYaml('sandbox: {use: local}\n').enabled).toBe(false);
    expect(parseAuthorizationConfigYaml('').enabled).toBe(false);
    expect(authorizationConfigFromDocument(undefined).enabled).toBe(false);
  });

  it('invalid YAML and non-mapping documents are ConfigErrors', () => {
    expect(() => parseAuthorizationConfigYaml('authorization: [')).toThrow(ConfigError);
    expect(() => authorizationConfigFromDocument(['x'])).toThrow(ConfigError);
  });

  it('refuses, as ConfigErrors and before parsing, what the sandbox config refuses', () => {
    // Over 1 MiB: the parser's time and memory grow with the text.
    const huge = `authorization:\n  enabled: false\n# ${'x'.repeat(1024 * 1024)}\n`;
    expect(issuesOf(() => parseAuthorizationConfigYaml(huge))[0]?.message).toMatch(/too large/);
    // An alias bomb: each level a list of aliases of the one below.
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++) {
      const prev = String.fromCharCode(96 + i);
      const name = String.fromCharCode(97 + i);
      levels.push(`${name}: &${name} [${Array(10).fill(`*${prev}`).join(', ')}]`);
    }
    expect(issuesOf(() => parseAuthorizationConfigYaml(levels.join('\n')))).not.toHaveLength(0);
    // A key that would reach the prototype of a plain object.
    const proto = parseAuthorizationConfigYaml.bind(
      null,
      'authorization:\n  __proto__: {enabled: true}\n',
    );
    expect(issuesOf(proto)[0]?.message).toMatch(/not accepted/);
  });
});
