import { describe, expect, it } from 'vitest';
import type { AuthorizationProvider } from './authorization-provider.js';
import { buildPrincipal } from './principal.js';
import type { Principal } from './principal.js';
import { RbacAuthorizationProvider } from './rbac-provider.js';
import { filterToolsForPrincipal } from './tool-filter.js';
import {
  CountingProvider,
  ROLES,
  failingProvider,
  rbacConfig,
  recordingLogger,
} from './test-support.js';

const as = (role?: string): Principal =>
  buildPrincipal(role === undefined ? {} : { userRole: role });
const TOOLS = ['bash', 'read_file', 'update_agent', 'web_search', 'ls'];

describe('filterToolsForPrincipal', () => {
  it('§7.15 disabled config → original list, and no provider is resolved', async () => {
    let imported = 0;
    const out = await filterToolsForPrincipal(as('guest'), TOOLS, {
      config: rbacConfig({ enabled: false, provider: { use: 'never#Loaded', config: {} } }),
      importer: async () => {
        imported++;
        return {};
      },
    });
    expect(out).toEqual(TOOLS);
    expect(out).not.toBe(TOOLS);
    expect(imported).toBe(0);
    expect(await filterToolsForPrincipal(as('guest'), TOOLS, { config: undefined })).toEqual(TOOLS);
  });

  it('§7.15 denied tools are removed, original order kept', async () => {
    expect(await filterToolsForPrincipal(as('guest'), TOOLS, { config: rbacConfig() })).toEqual([
      'read_file',
      'web_search',
    ]);
    expect(await filterToolsForPrincipal(as('user'), TOOLS, { config: rbacConfig() })).toEqual([
      'bash',
      'read_file',
      'web_search',
      'ls',
    ]);
  });

  it('filters tool definitions by name and keeps the same objects', async () => {
    const defs = TOOLS.map((name) => ({ name, description: `${name} tool` }));
    const out = await filterToolsForPrincipal(as('guest'), defs, { config: rbacConfig() });
    expect(out).toEqual([defs[1], defs[3]]);
    expect(out[0]).toBe(defs[1]);
  });

  it('the missing role falls back to default_role', async () => {
    expect(
      await filterToolsForPrincipal(as(), TOOLS, { config: rbacConfig({ defaultRole: 'guest' }) }),
    ).toEqual(['read_file', 'web_search']);
  });

  it.each([
    ['authorize/filter raising', failingProvider()],
    [
      'filterResources raising',
      {
        authorize: () => Promise.reject(new Error('x')),
        filterResources: () => Promise.reject(new Error('down')),
      } satisfies AuthorizationProvider,
    ],
  ])(
    '§7.15 provider error (%s) → [] when fail_closed, original when fail-open',
    async (_l, provider) => {
      const logger = recordingLogger();
      expect(
        await filterToolsForPrincipal(as('user'), TOOLS, {
          config: rbacConfig(),
          provider,
          logger,
        }),
      ).toEqual([]);
      expect(
        await filterToolsForPrincipal(as('user'), TOOLS, {
          config: rbacConfig({ failClosed: false }),
          provider,
          logger,
        }),
      ).toEqual(TOOLS);
      expect(logger.lines.map((l) => l.level)).toEqual(['warn', 'warn']);
    },
  );

  it('§7.15 an unknown role is a provider error → [] when fail_closed', async () => {
    expect(
      await filterToolsForPrincipal(as('wizard'), TOOLS, {
        config: rbacConfig(),
        logger: recordingLogger(),
      }),
    ).toEqual([]);
  });

  it('§7.15 a provider resolution error → [] when fail_closed, original when fail-open', async () => {
    const broken = { use: 'missing#P', config: {} };
    const importer = () => Promise.reject(new Error('not installed'));
    const logger = recordingLogger();
    expect(
      await filterToolsForPrincipal(as('user'), TOOLS, {
        config: rbacConfig({ provider: broken }),
        importer,
        logger,
      }),
    ).toEqual([]);
    expect(
      await filterToolsForPrincipal(as('user'), TOOLS, {
        config: rbacConfig({ provider: broken, failClosed: false }),
        importer,
        logger,
      }),
    ).toEqual(TOOLS);
  });

  it.each([
    ['a string', 'bash'],
    ['a list with a number', ['bash', 1]],
    ['undefined', undefined],
  ])('§7.15 a non-list result (%s) counts as an error → fail closed', async (_l, result) => {
    const provider: AuthorizationProvider = {
      authorize: () => Promise.reject(new Error('unused')),
      filterResources: async () => result as never,
    };
    expect(
      await filterToolsForPrincipal(as('user'), TOOLS, {
        config: rbacConfig(),
        provider,
        logger: recordingLogger(),
      }),
    ).toEqual([]);
  });

  it('§7.15 a provider cannot add tools', async () => {
    const provider: AuthorizationProvider = {
      authorize: () => Promise.reject(new Error('unused')),
      filterResources: async () => ['ls', 'rm_rf', 'bash'],
    };
    expect(
      await filterToolsForPrincipal(as('user'), TOOLS, { config: rbacConfig(), provider }),
    ).toEqual(['bash', 'ls']);
  });

  it('§7.15 a provided provider instance is reused (no resolution)', async () => {
    const counting = new CountingProvider(new RbacAuthorizationProvider(ROLES));
    let imported = 0;
    const options = {
      config: rbacConfig({ provider: { use: 'never#Loaded', config: {} } }),
      provider: counting,
      importer: async () => {
        imported++;
        return {};
      },
    };
    await filterToolsForPrincipal(as('guest'), TOOLS, options);
    await filterToolsForPrincipal(as('admin'), TOOLS, options);
    expect(imported).toBe(0);
    expect(counting.calls.map((c) => c.role)).toEqual(['guest', 'admin']);
  });

  it('without filterResources, falls back to one authorize per tool', async () => {
    const rbac = new RbacAuthorizationProvider(ROLES);
    const calls: string[] = [];
    const provider: AuthorizationProvider = {
      authorize: (p, resource, action, options) => {
        calls.push(`${resource}:${action}:${options.target}`);
        return rbac.authorize(p, resource, action, options);
      },
    };
    expect(
      await filterToolsForPrincipal(as('guest'), TOOLS, { config: rbacConfig(), provider }),
    ).toEqual(['read_file', 'web_search']);
    expect(calls).toEqual(TOOLS.map((t) => `tool:call:${t}`));
  });

  it('never mutates the input list', async () => {
    const input = [...TOOLS];
    await filterToolsForPrincipal(as('guest'), input, { config: rbacConfig() });
    expect(input).toEqual(TOOLS);
  });

  it('a config getter that throws offers no tools', async () => {
    expect(
      await filterToolsForPrincipal(as('admin'), TOOLS, {
        config: () => {
          throw new Error('unreadable');
        },
        logger: recordingLogger(),
      }),
    ).toEqual([]);
  });
});
