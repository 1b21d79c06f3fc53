import { errorMessage, ConfigError, ProviderLoadError } from '@sbx/core';
import type { AuthorizationConfig } from './authorization-config.js';
import { isAuthorizationProvider } from './authorization-provider.js';
import type { AuthorizationProvider } from './authorization-provider.js';
import { describeType } from './principal.js';
import { RbacAuthorizationProvider } from './rbac-provider.js';

/** Loads a module by specifier; injectable so tests need not install packages. */
export type ModuleImporter = (specifier: string) => Promise<unknown>;

/** A provider class (or any constructor) that takes `authorization.provider.config`. */
export type AuthorizationProviderClass = new (
  config: Readonly<Record<string, unknown>>,
) => AuthorizationProvider;

/** The `use` value that names the built-in RBAC provider (also the default when `use` is absent). */
export const BUILTIN_RBAC_PROVIDER_USE = '@sbx/authz#RbacAuthorizationProvider';

export interface ResolveProviderOptions {
  importer?: ModuleImporter;
}

/** A discovered provider class, not yet constructed. */
export interface AuthorizationProviderSpec {
  /** The `use` string it came from (the built-in name when `use` was absent). */
  readonly use: string;
  readonly providerClass: AuthorizationProviderClass;
}

const defaultImporter: ModuleImporter = (specifier) => import(specifier);

function splitUse(use: string): { moduleName: string; exportName: string | undefined } {
  const hash = use.lastIndexOf('#');
  if (hash === -1) return { moduleName: use, exportName: undefined };
  return { moduleName: use.slice(0, hash), exportName: use.slice(hash + 1) };
}

function errorText(err: unknown): string {
  return errorMessage(err);
}

/** A provider's config error, with key paths as the user wrote them in the YAML file. */
function constructionProblem(err: unknown): string {
  if (!(err instanceof ConfigError) || err.issues.length === 0) return errorText(err);
  return err.issues
    .map((i) => {
      const path = i.path
        ? `authorization.provider.config.${i.path}`
        : 'authorization.provider.config';
      return `${path}: ${i.message}`;
    })
    .join('; ');
}

function noProvider(): ConfigError {
  return new ConfigError(
    [
      {
        path: 'authorization.provider',
        message:
          'authorization.enabled is true but no provider is configured; set authorization.provider (use + config)',
      },
    ],
    'Invalid authorization configuration',
  );
}

/**
 * Finds the provider class named by `authorization.provider.use` without constructing it. Separate
 * from construction so module loading (possibly slow, possibly failing) can be told apart from a
 * provider rejecting its config.
 *
 * @throws ConfigError when authorization is enabled without a provider section
 * @throws ProviderLoadError when the module or export cannot be found or is not a class
 */
export async function resolveAuthorizationProviderSpec(
  config: AuthorizationConfig,
  options: ResolveProviderOptions = {},
): Promise<AuthorizationProviderSpec> {
  if (!config.provider) throw noProvider();
  const use = config.provider.use ?? BUILTIN_RBAC_PROVIDER_USE;
  if (use === BUILTIN_RBAC_PROVIDER_USE) {
    // Never self-import: the package may be bundled or linked under another name.
    return {
      use,
      providerClass: RbacAuthorizationProvider as unknown as AuthorizationProviderClass,
    };
  }

  const { moduleName, exportName } = splitUse(use);
  if (moduleName === '' || exportName === '') {
    throw new ProviderLoadError(
      use,
      `Failed to resolve authorization provider class '${use}': expected '<package>' or '<package>#<ExportName>'`,
    );
  }
  let mod: unknown;
  try {
    mod = await (options.importer ?? defaultImporter)(moduleName);
  } catch (err) {
    throw new ProviderLoadError(
      use,
      `Failed to resolve authorization provider class '${use}': ${errorText(err)}`,
      { cause: err },
    );
  }
  const namespace = (mod ?? {}) as Record<string, unknown>;
  const exported = exportName === undefined ? namespace.default : namespace[exportName];
  if (exported === undefined) {
    throw new ProviderLoadError(
      use,
      `Failed to resolve authorization provider class '${use}': module '${moduleName}' has no export '${exportName ?? 'default'}'`,
    );
  }
  if (typeof exported !== 'function') {
    throw new ProviderLoadError(
      use,
      `Failed to resolve authorization provider class '${use}': export is a ${describeType(exported)}, not a class`,
    );
  }
  return { use, providerClass: exported as AuthorizationProviderClass };
}

/**
 * Builds a provider from a discovered class with `authorization.provider.config` only: the factory
 * never injects `fail_closed` or `default_role` (those belong to the enforcing layer). For the
 * built-in RBAC provider, `default_role` must be one of its roles, or every anonymous request would
 * fail at runtime instead of at startup.
 *
 * @throws ProviderLoadError wrapping the constructor's error, a non-provider instance, or an
 *   undefined default role
 */
export function constructAuthorizationProvider(
  spec: AuthorizationProviderSpec,
  config: AuthorizationConfig,
): AuthorizationProvider {
  const { use, providerClass } = spec;
  let instance: unknown;
  try {
    instance = new providerClass({ ...(config.provider?.config ?? {}) });
  } catch (err) {
    throw new ProviderLoadError(
      use,
      `Failed to construct authorization provider '${use}': ${constructionProblem(err)}`,
      { cause: err },
    );
  }
  if (!isAuthorizationProvider(instance)) {
    throw new ProviderLoadError(
      use,
      `Authorization provider '${use}' does not satisfy the AuthorizationProvider interface (needs an authorize() method)`,
    );
  }
  if (instance instanceof RbacAuthorizationProvider && !instance.hasRole(config.defaultRole)) {
    throw new ProviderLoadError(
      use,
      `Invalid authorization default_role for provider '${use}': '${config.defaultRole}' is not a defined role; known roles: [${instance.roleNames.map((r) => `'${r}'`).join(', ')}]`,
    );
  }
  return instance;
}

/**
 * The provider for `config`, or `undefined` when authorization is disabled (nothing is imported
 * then). Builds a new instance on every call: enforcement layers call it per decision so a changed
 * policy applies to the next call.
 */
export async function resolveAuthorizationProvider(
  config: AuthorizationConfig,
  options: ResolveProviderOptions = {},
): Promise<AuthorizationProvider | undefined> {
  if (config.enabled !== true) return undefined;
  return constructAuthorizationProvider(
    await resolveAuthorizationProviderSpec(config, options),
    config,
  );
}
