import { ConfigError, InvalidArgumentError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { buildPrincipal } from './principal.js';
import { RbacAuthorizationProvider } from './rbac-provider.js';
import type { RbacProviderConfig } from './rbac-provider.js';

const as = (role: string | undefined) => buildPrincipal({ userRole: role });

function rbac(config: unknown): RbacAuthorizationProvider {
  return new RbacAuthorizationProvider(config as RbacProviderConfig);
}

async function allowed(
  provider: RbacAuthorizationProvider,
  role: string,
  resource: string,
  target: string,
): Promise<boolean> {
  return (await provider.authorize(as(role), resource, 'call', { target })).allowed;
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('RbacAuthorizationProvider decisions', () => {
  it.each([
    ['"*"', '*', true],
    ['true', true, true],
    ['false', false, false],
    ['[]', [], false],
  ])('§7.5 allow: %s → allowed=%s for any target', async (_l, allow, expected) => {
    const p = rbac({ roles: { r: { tools: { allow } } } });
    expect(await allowed(p, 'r', 'tool', 'bash')).toBe(expected);
    expect(await allowed(p, 'r', 'tool', 'read_file')).toBe(expected);
  });

  it('§7.5 a list allows exact members only (no glob, no prefix, case-sensitive)', async () => {
    const p = rbac({ roles: { r: { tools: { allow: ['read_file', 'web_*'] } } } });
    expect(await allowed(p, 'r', 'tool', 'read_file')).toBe(true);
    expect(await allowed(p, 'r', 'tool', 'read_file2')).toBe(false);
    expect(await allowed(p, 'r', 'tool', 'Read_File')).toBe(false);
    expect(await allowed(p, 'r', 'tool', 'web_search')).toBe(false);
    expect(await allowed(p, 'r', 'tool', 'web_*')).toBe(true);
  });

  it('§7.5 a policy without an allow key allows everything not denied', async () => {
    const p = rbac({ roles: { r: { tools: { deny: ['bash'] } } } });
    expect(await allowed(p, 'r', 'tool', 'ls')).toBe(true);
    expect(await allowed(p, 'r', 'tool', 'bash')).toBe(false);
    const empty = rbac({ roles: { r: { tools: {} } } });
    expect(await allowed(empty, 'r', 'tool', 'bash')).toBe(true);
  });

  it.each([
    ['"*"', '*'],
    ['true', true],
    ['a list', ['bash', 'ls']],
  ])('§7.6 deny overrides allow: %s', async (_l, allow) => {
    const p = rbac({ roles: { r: { tools: { allow, deny: ['bash'] } } } });
    expect(await allowed(p, 'r', 'tool', 'bash')).toBe(false);
    expect(await allowed(p, 'r', 'tool', 'ls')).toBe(true);
  });

  it('sandbox gate target "*": allow ["*"] permits, allow ["bash"] denies, deny ["*"] denies', async () => {
    const p = rbac({
      roles: {
        star: { sandbox: { allow: ['*'] } },
        named: { sandbox: { allow: ['bash'] } },
        denied: { sandbox: { allow: '*', deny: ['*'] } },
      },
    });
    expect(await allowed(p, 'star', 'sandbox', '*')).toBe(true);
    expect(await allowed(p, 'named', 'sandbox', '*')).toBe(false);
    expect(await allowed(p, 'denied', 'sandbox', '*')).toBe(false);
  });

  it('§7.8 resource aliases map to config keys: tool→tools, model→models, and the rest', async () => {
    const p = rbac({
      roles: {
        r: {
          tools: { allow: [] },
          models: { allow: [] },
          skills: { allow: [] },
          mcp_servers: { allow: [] },
          routes: { allow: [] },
          sandbox: { allow: [] },
        },
      },
    });
    for (const resource of ['tool', 'model', 'skill', 'mcp_server', 'route', 'sandbox']) {
      expect(await allowed(p, 'r', resource, 'x')).toBe(false);
    }
  });

  it('§7.8 an unknown resource name is looked up verbatim, never pluralised', async () => {
    const p = rbac({ roles: { r: { widgets: { allow: ['a'] } } } });
    expect(await allowed(p, 'r', 'widgets', 'b')).toBe(false);
    expect(await allowed(p, 'r', 'widgets', 'a')).toBe(true);
    // `widget` is not mapped to `widgets`: no policy → unrestricted.
    expect(await allowed(p, 'r', 'widget', 'b')).toBe(true);
  });

  it('§7.8 no policy → allow with authz.no_policy and policyId rbac:unrestricted', async () => {
    const p = rbac({ roles: { r: { tools: { allow: [] } } } });
    expect(await p.authorize(as('r'), 'model', 'use', { target: 'gpt' })).toEqual({
      allowed: true,
      reason: { code: 'authz.no_policy', message: 'no policy configured' },
      policyId: 'rbac:unrestricted',
    });
  });

  it('reports allow and deny reasons and policy ids', async () => {
    const p = rbac({ roles: { user: { tools: { allow: ['ls'] } } } });
    expect(await p.authorize(as('user'), 'tool', 'call', { target: 'ls' })).toMatchObject({
      allowed: true,
      reason: { code: 'authz.allowed' },
      policyId: 'rbac:allow',
    });
    expect(await p.authorize(as('user'), 'tool', 'call', { target: 'bash' })).toEqual({
      allowed: false,
      reason: {
        code: 'authz.denied',
        message: "role 'user' is denied 'bash' on resource 'tool'",
      },
      policyId: 'rbac:deny',
    });
  });

  it('ignores the action', async () => {
    const p = rbac({ roles: { r: { tools: { allow: ['ls'] } } } });
    for (const action of ['call', 'execute', 'anything']) {
      expect((await p.authorize(as('r'), 'tool', action, { target: 'ls' })).allowed).toBe(true);
    }
  });

  it('a role with no resources at all is unrestricted', async () => {
    const p = rbac({ roles: { admin: {} } });
    expect(await allowed(p, 'admin', 'sandbox', '*')).toBe(true);
  });
});

describe('RbacAuthorizationProvider role errors', () => {
  const p = rbac({ roles: { user: {}, admin: {} } });

  it.each([
    ['unknown', 'wizard', "Unknown role 'wizard'; known roles: ['user', 'admin']"],
    ['missing', undefined, 'Principal has no role; cannot evaluate RBAC policy'],
    ['empty', '', 'Principal has no role; cannot evaluate RBAC policy'],
  ])(
    '§7.9 %s role → InvalidArgumentError from authorize and filterResources',
    async (_l, role, msg) => {
      const principal = as(role);
      await expect(p.authorize(principal, 'tool', 'call', { target: 'ls' })).rejects.toThrow(
        new InvalidArgumentError(msg),
      );
      await expect(p.filterResources(principal, 'tool', ['ls'])).rejects.toThrow(
        new InvalidArgumentError(msg),
      );
      expect(() => p.decide(principal, 'tool', 'ls')).toThrow(InvalidArgumentError);
    },
  );
});

describe('RbacAuthorizationProvider.filterResources', () => {
  const p = rbac({ roles: { r: { tools: { allow: ['a', 'b'], deny: ['b'] } }, free: {} } });

  it('§7.10 keeps order and duplicates, adds nothing, leaves input intact, equals per-item authorize', async () => {
    const input = ['c', 'a', 'b', 'a', 'x'];
    const copy = [...input];
    const out = await p.filterResources(as('r'), 'tool', input);
    expect(out).toEqual(['a', 'a']);
    expect(input).toEqual(copy);
    const perItem: string[] = [];
    for (const c of input) if (await allowed(p, 'r', 'tool', c)) perItem.push(c);
    expect(out).toEqual(perItem);
    const unrestricted = await p.filterResources(as('free'), 'tool', input);
    expect(unrestricted).toEqual(input);
    expect(unrestricted).not.toBe(input);
  });
});

describe('RbacAuthorizationProvider input validation', () => {
  const shapes: [string, unknown][] = [
    ['no policy', {}],
    ['allow all', { tools: { allow: '*' } }],
    ['allow none', { tools: { allow: [] } }],
    ['allow list', { tools: { allow: ['a'] } }],
    ['deny list', { tools: { deny: ['a'] } }],
  ];

  it.each(shapes)(
    '§7.11 invalid resource/target/candidates → InvalidArgumentError (%s)',
    async (_l, role) => {
      const p = rbac({ roles: { r: role } });
      const principal = as('r');
      for (const bad of ['', undefined, 3]) {
        await expect(
          p.authorize(principal, bad as string, 'call', { target: 'a' }),
        ).rejects.toThrow(/resource must be a non-empty string/);
        await expect(
          p.authorize(principal, 'tool', 'call', { target: bad as string }),
        ).rejects.toThrow(/target must be a non-empty string/);
        await expect(p.filterResources(principal, 'tool', [bad as string])).rejects.toThrow(
          InvalidArgumentError,
        );
      }
      await expect(
        p.filterResources(principal, 'tool', 'a' as unknown as string[]),
      ).rejects.toThrow(/candidates must be an array/);
      await expect(p.filterResources(principal, '', ['a'])).rejects.toThrow(InvalidArgumentError);
    },
  );
});

describe('RbacAuthorizationProvider construction', () => {
  it.each<[string, unknown, string, RegExp]>([
    [
      'extra keys',
      { roles: {}, fail_closed: true },
      '',
      /unknown provider config keys \['fail_closed'\]; supported: \['roles'\]/,
    ],
    ['missing roles', {}, 'roles', /missing required provider config key 'roles'/],
    ['non-mapping config', ['roles'], '', /provider config must be a mapping, got Array/],
    ['non-mapping roles', { roles: ['admin'] }, 'roles', /got Array/],
    ['non-mapping role', { roles: { admin: 'all' } }, 'roles.admin', /got string/],
    ['null role', { roles: { admin: null } }, 'roles.admin', /got null/],
    ['non-mapping policy', { roles: { r: { tools: ['ls'] } } }, 'roles.r.tools', /got Array/],
    ['null allow', { roles: { r: { tools: { allow: null } } } }, 'roles.r.tools.allow', /got null/],
    ['null deny', { roles: { r: { tools: { deny: null } } } }, 'roles.r.tools.deny', /got null/],
    [
      'bad allow string',
      { roles: { r: { tools: { allow: 'all' } } } },
      'roles.r.tools.allow',
      /got the string 'all'/,
    ],
    [
      'numeric allow',
      { roles: { r: { tools: { allow: 1 } } } },
      'roles.r.tools.allow',
      /got number/,
    ],
    ['deny true', { roles: { r: { tools: { deny: true } } } }, 'roles.r.tools.deny', /got boolean/],
    [
      'non-string allow item',
      { roles: { r: { tools: { allow: ['a', 2] } } } },
      'roles.r.tools.allow[1]',
      /got number/,
    ],
    [
      'empty deny item',
      { roles: { r: { tools: { deny: [''] } } } },
      'roles.r.tools.deny[0]',
      /empty string/,
    ],
    [
      'unknown policy key',
      { roles: { r: { tools: { alow: ['a'] } } } },
      'roles.r.tools.alow',
      /unknown policy key 'alow'/,
    ],
    [
      'numeric policy key',
      { roles: { r: { tools: { 1: ['a'] } } } },
      'roles.r.tools.1',
      /unknown policy key '1'/,
    ],
    ['empty role name', { roles: { '': {} } }, 'roles.', /role name must be a non-empty string/],
    [
      'empty resource key',
      { roles: { r: { '': {} } } },
      'roles.r.',
      /resource key must be a non-empty string/,
    ],
  ])('§7.12 rejects %s', (_l, config, path, message) => {
    const err = configError(() => rbac(config));
    const issue = err.issues.find((i) => i.path === path);
    expect(issue, JSON.stringify(err.issues)).toBeDefined();
    expect(issue!.message).toMatch(message);
  });

  it('§7.7 a request alias as config key is rejected, also when the real key is present', () => {
    for (const roles of [
      { r: { tool: { allow: '*' } } },
      { r: { tools: { allow: '*' }, tool: { allow: [] } } },
    ]) {
      const err = configError(() => rbac({ roles }));
      expect(err.issues).toContainEqual({
        path: 'roles.r.tool',
        message:
          "role 'r' resource key 'tool' is a reserved request alias; use 'tools' in RBAC config",
      });
    }
    expect(configError(() => rbac({ roles: { r: { route: {} } } })).message).toMatch(
      /use 'routes'/,
    );
  });

  it('§7.7 `sandbox` is accepted because it maps to itself', async () => {
    const p = rbac({ roles: { r: { sandbox: { allow: [] } } } });
    expect(await allowed(p, 'r', 'sandbox', '*')).toBe(false);
  });

  it('reports every issue at once', () => {
    const err = configError(() =>
      rbac({ roles: { a: { tools: { allow: null } }, b: { models: { deny: 'x' } } } }),
    );
    expect(err.issues.map((i) => i.path)).toEqual(['roles.a.tools.allow', 'roles.b.models.deny']);
  });

  it('§7.13 mutating the config after construction does not change decisions', async () => {
    const config = {
      roles: { r: { tools: { allow: ['a'], deny: ['b'] } } } as Record<
        string,
        Record<string, { allow: string[]; deny: string[] }>
      >,
    };
    const p = rbac(config);
    config.roles.r!.tools!.allow.push('c');
    config.roles.r!.tools!.deny.length = 0;
    config.roles.intruder = {};
    expect(await allowed(p, 'r', 'tool', 'c')).toBe(false);
    expect(await allowed(p, 'r', 'tool', 'a')).toBe(true);
    await expect(p.authorize(as('intruder'), 'tool', 'call', { target: 'a' })).rejects.toThrow(
      /Unknown role/,
    );
  });

  it('exposes role names for default-role validation', () => {
    const p = rbac({ roles: { admin: {}, user: {} } });
    expect(p.roleNames).toEqual(['admin', 'user']);
    expect(p.hasRole('user')).toBe(true);
    expect(p.hasRole('guest')).toBe(false);
  });
});
