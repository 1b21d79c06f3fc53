import { ConfigError, ProviderLoadError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import type { AuthorizationConfig } from './authorization-config.js';
import type { AuthorizationDecision, AuthorizationProvider } from './authorization-provider.js';
import {
  BUILTIN_RBAC_PROVIDER_USE,
  resolveAuthorizationProvider,
  resolveAuthorizationProviderSpec,
} from './provider-loader.js';
import type { ModuleImporter } from './provider-loader.js';
import { RbacAuthorizationProvider } from './rbac-provider.js';

const ROLES = { roles: { user: {}, admin: {} } };

function enabled(
  provider: AuthorizationConfig['provider'],
  defaultRole = 'user',
): AuthorizationConfig {
  return { enabled: true, failClosed: true, defaultRole, ...(provider ? { provider } : {}) };
}

class RecordingProvider implements AuthorizationProvider {
  static constructed: Readonly<Record<string, unknown>>[] = [];
  constructor(readonly config: Readonly<Record<string, unknown>>) {
    RecordingProvider.constructed.push(config);
  }
  async authorize(): Promise<AuthorizationDecision> {
    return { allowed: true, reason: { code: 'test', message: '' } };
  }
}

/** A fake module registry: importing an unknown name fails like Node does. */
function registry(modules: Record<string, unknown>): ModuleImporter & { calls: string[] } {
  const calls: string[] = [];
  const importer = async (specifier: string) => {
    calls.push(specifier);
    if (!(specifier in modules)) {
      throw Object.assign(new Error(`Cannot find package '${specifier}'`), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    }
    return modules[specifier];
  };
  return Object.assign(importer, { calls });
}

async function loadError(promise: Promise<unknown>): Promise<ProviderLoadError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ProviderLoadError);
    return err as ProviderLoadError;
  }
  throw new Error('expected a ProviderLoadError');
}

describe('resolveAuthorizationProvider', () => {
  it('§7.14 disabled → undefined and an invalid class path is never imported', async () => {
    const importer = registry({});
    const config: AuthorizationConfig = {
      enabled: false,
      failClosed: true,
      defaultRole: 'user',
      provider: { use: 'does-not-exist#Nope', config: {} },
    };
    expect(await resolveAuthorizationProvider(config, { importer })).toBeUndefined();
    expect(importer.calls).toEqual([]);
  });

  it('§7.14 enabled without a provider → ConfigError', async () => {
    await expect(resolveAuthorizationProvider(enabled(undefined))).rejects.toThrow(ConfigError);
    await expect(resolveAuthorizationProvider(enabled(undefined))).rejects.toThrow(
      /no provider is configured/,
    );
  });

  it('builds the built-in RBAC provider when use is absent or names it, without importing', async () => {
    const importer = registry({});
    for (const use of [undefined, BUILTIN_RBAC_PROVIDER_USE]) {
      const p = await resolveAuthorizationProvider(
        enabled({ ...(use ? { use } : {}), config: ROLES }),
        { importer },
      );
      expect(p).toBeInstanceOf(RbacAuthorizationProvider);
    }
    expect(importer.calls).toEqual([]);
  });

  it('loads `<package>#<Export>` and the default export of `<package>`', async () => {
    const importer = registry({
      '@acme/authz': { AcmeProvider: RecordingProvider },
      'plain-authz': { default: RecordingProvider },
    });
    RecordingProvider.constructed = [];
    const a = await resolveAuthorizationProvider(
      enabled({ use: '@acme/authz#AcmeProvider', config: { endpoint: 'x' } }),
      { importer },
    );
    const b = await resolveAuthorizationProvider(enabled({ use: 'plain-authz', config: {} }), {
      importer,
    });
    expect(a).toBeInstanceOf(RecordingProvider);
    expect(b).toBeInstanceOf(RecordingProvider);
    expect(importer.calls).toEqual(['@acme/authz', 'plain-authz']);
    expect(RecordingProvider.constructed).toEqual([{ endpoint: 'x' }, {}]);
  });

  it('§7.14 the factory does not inject fail_closed or default_role into the provider config', async () => {
    const importer = registry({ m: { P: RecordingProvider } });
    RecordingProvider.constructed = [];
    await resolveAuthorizationProvider(
      {
        enabled: true,
        failClosed: false,
        defaultRole: 'x',
        provider: { use: 'm#P', config: { a: 1 } },
      },
      { importer },
    );
    expect(RecordingProvider.constructed).toEqual([{ a: 1 }]);
  });

  it('§7.14 each call returns a new instance', async () => {
    const config = enabled({ config: ROLES });
    const a = await resolveAuthorizationProvider(config);
    const b = await resolveAuthorizationProvider(config);
    expect(a).not.toBe(b);
  });

  it.each<[string, Record<string, unknown>, string, RegExp]>([
    [
      'missing module',
      {},
      'nope#P',
      /Failed to resolve authorization provider class 'nope#P': Cannot find package 'nope'/,
    ],
    ['missing export', { m: {} }, 'm#P', /module 'm' has no export 'P'/],
    ['missing default export', { m: { P: RecordingProvider } }, 'm', /has no export 'default'/],
    ['non-class export', { m: { P: { authorize: 1 } } }, 'm#P', /export is a Object, not a class/],
    ['bad use format', {}, 'm#', /expected '<package>' or '<package>#<ExportName>'/],
    [
      'non-protocol instance',
      { m: { P: class {} } },
      'm#P',
      /'m#P' does not satisfy the AuthorizationProvider interface/,
    ],
    [
      'throwing constructor',
      {
        m: {
          P: class {
            constructor() {
              throw new Error('boom');
            }
          },
        },
      },
      'm#P',
      /Failed to construct authorization provider 'm#P': boom/,
    ],
  ])('§7.14 %s → ProviderLoadError naming the class path', async (_l, modules, use, message) => {
    const err = await loadError(
      resolveAuthorizationProvider(enabled({ use, config: {} }), { importer: registry(modules) }),
    );
    expect(err.message).toMatch(message);
    expect(err.specifier).toBe(use);
  });

  it('§7.14 the import failure is chained as the cause', async () => {
    const err = await loadError(
      resolveAuthorizationProvider(enabled({ use: 'nope#P', config: {} }), {
        importer: registry({}),
      }),
    );
    expect((err.cause as { code?: string }).code).toBe('ERR_MODULE_NOT_FOUND');
  });

  it('§7.14 invalid RBAC config surfaces the class path and the key path', async () => {
    const err = await loadError(
      resolveAuthorizationProvider(enabled({ config: { roles: { user: { tool: {} } } } })),
    );
    expect(err.message).toContain(`'${BUILTIN_RBAC_PROVIDER_USE}'`);
    expect(err.message).toContain('authorization.provider.config.roles.user.tool: ');
    expect(err.cause).toBeInstanceOf(ConfigError);
  });

  it('§7.14 an unknown default_role fails at resolution', async () => {
    const err = await loadError(resolveAuthorizationProvider(enabled({ config: ROLES }, 'guest')));
    expect(err.message).toMatch(
      /Invalid authorization default_role for provider '@sbx\/authz#RbacAuthorizationProvider': 'guest' is not a defined role; known roles: \['user', 'admin'\]/,
    );
  });

  it('the spec step discovers without constructing', async () => {
    const importer = registry({ m: { P: RecordingProvider } });
    RecordingProvider.constructed = [];
    const spec = await resolveAuthorizationProviderSpec(enabled({ use: 'm#P', config: {} }), {
      importer,
    });
    expect(spec.use).toBe('m#P');
    expect(spec.providerClass).toBe(RecordingProvider);
    expect(RecordingProvider.constructed).toEqual([]);
  });
});
