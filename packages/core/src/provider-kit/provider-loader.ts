import type { SandboxConfig } from '../config/config.js';
import { ProviderLoadError, isSbxError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { isModuleNotFoundFor } from '../modules/optional-dependency.js';
import { parseProviderSpecifier, providerSpecifierProblem } from '../modules/provider-specifier.js';
import { SandboxProvider } from '../contract/sandbox-provider.js';
import { errorMessage } from '../errors/error-inspection.js';

/** Loads a module by specifier; injectable so tests need not install packages. */
export type ModuleImporter = (specifier: string) => Promise<unknown>;

/** What every provider constructor / factory receives. */
export interface SandboxProviderInit {
  readonly config: SandboxConfig;
  readonly logger?: Logger | undefined;
  /**
   * `false` for a short-lived process that only inspects (e.g. `sbx ls`, `sbx gc`): the provider
   * must start no background work of its own (start-up reconciliation, renewal, idle reaping),
   * since adopting containers there would hand them to this process's `shutdown()`. Default `true`.
   * Providers without background work ignore it.
   */
  readonly background?: boolean | undefined;
}

export type SandboxProviderClass = new (init: SandboxProviderInit) => SandboxProvider;
export type SandboxProviderFactory = (
  init: SandboxProviderInit,
) => SandboxProvider | Promise<SandboxProvider>;

/** A provider found by `loadProviderClass`, not yet constructed. */
export interface LoadedProvider {
  readonly specifier: string;
  readonly packageName: string;
  /** The export actually used (`default`, `createProvider`, or a class name). */
  readonly exportName: string;
  readonly kind: 'class' | 'factory';
  readonly target: SandboxProviderClass | SandboxProviderFactory;
  /** Constructs (or calls the factory) and checks the result really is a provider. */
  create(init: SandboxProviderInit): Promise<SandboxProvider>;
}

export interface LoadProviderOptions {
  importer?: ModuleImporter;
}

/** Name of the conventional factory export used when a package has no default export. */
export const PROVIDER_FACTORY_EXPORT = 'createProvider';

const defaultImporter: ModuleImporter = (specifier) => import(specifier);

const PROVIDER_METHODS = ['acquire', 'get', 'release'] as const;

/**
 * `instanceof` fails when an application ends up with two copies of @sbx/core (the provider
 * package's and its own), so a structural check backs it up.
 */
function looksLikeProvider(value: unknown): value is SandboxProvider {
  if (value instanceof SandboxProvider) return true;
  if (typeof value !== 'object' || value === null) return false;
  return PROVIDER_METHODS.every((m) => typeof (value as Record<string, unknown>)[m] === 'function');
}

function isProviderClass(value: unknown): value is SandboxProviderClass {
  if (typeof value !== 'function' || value === SandboxProvider) return false;
  const proto = (value as { prototype?: unknown }).prototype;
  if (proto instanceof SandboxProvider) return true;
  return (
    typeof proto === 'object' &&
    proto !== null &&
    PROVIDER_METHODS.every((m) => typeof (proto as Record<string, unknown>)[m] === 'function')
  );
}

function isClassSyntax(value: unknown): boolean {
  return typeof value === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(value));
}

function exportsOf(mod: unknown): Record<string, unknown> {
  if (typeof mod !== 'object' || mod === null) return {};
  const ns = mod as Record<string, unknown>;
  // CommonJS packages arrive as { default: module.exports }; look inside as well.
  const cjs = ns.default;
  if (typeof cjs === 'object' && cjs !== null && !Array.isArray(cjs)) {
    return { ...(cjs as Record<string, unknown>), ...ns };
  }
  return ns;
}

/**
 * Which export of a package is the provider when `use` names none:
 * 1. the `default` export (a provider class or factory);
 * 2. else an export named `createProvider` (a factory);
 * 3. else the one export that is a SandboxProvider subclass (several → ambiguous, name one).
 */
function pickDefaultExport(
  specifier: string,
  packageName: string,
  exports: Record<string, unknown>,
): [string, unknown] {
  const def = exports.default;
  if (typeof def === 'function') return ['default', def];
  if (typeof exports[PROVIDER_FACTORY_EXPORT] === 'function') {
    return [PROVIDER_FACTORY_EXPORT, exports[PROVIDER_FACTORY_EXPORT]];
  }
  const classes = Object.entries(exports).filter(([, v]) => isProviderClass(v));
  const unique = [...new Map(classes.map(([k, v]) => [v, k])).entries()];
  if (unique.length === 1) {
    const [value, name] = unique[0] as [unknown, string];
    return [name, value];
  }
  if (unique.length > 1) {
    const names = unique.map(([, n]) => n).sort();
    throw new ProviderLoadError(
      specifier,
      `Package "${packageName}" exports several sandbox providers (${names.join(', ')}); choose one with use: "${packageName}#${names[0]}"`,
    );
  }
  throw new ProviderLoadError(
    specifier,
    `Package "${packageName}" has no default export, no "${PROVIDER_FACTORY_EXPORT}" factory and no SandboxProvider subclass export; name the export with use: "${packageName}#<ExportName>"`,
  );
}

/**
 * Resolves a provider specifier (`@sbx/local`, `@sbx/aio#AioSandboxProvider`) to a provider class
 * or factory by dynamic `import()`. Import happens here; construction happens in `create()`.
 *
 * @throws ProviderLoadError when the specifier is malformed, the package is not installed (with an
 *   install hint), the export is missing, or the export is not a SandboxProvider subclass/factory.
 *   Other failures while importing an installed package are wrapped with the original as `cause`,
 *   except SbxErrors, which pass through unchanged.
 */
export async function loadProviderClass(
  specifier: string,
  options: LoadProviderOptions = {},
): Promise<LoadedProvider> {
  const spec = parseProviderSpecifier(specifier);
  if (!spec) {
    throw new ProviderLoadError(
      specifier,
      `Invalid sandbox provider "${specifier}": ${providerSpecifierProblem(specifier) ?? 'malformed'}`,
    );
  }
  const importer = options.importer ?? defaultImporter;
  let mod: unknown;
  try {
    mod = await importer(spec.moduleName);
  } catch (err) {
    if (isModuleNotFoundFor(err, spec.moduleName) || isModuleNotFoundFor(err, spec.packageName)) {
      throw new ProviderLoadError(
        specifier,
        `Sandbox provider package "${spec.packageName}" is not installed. Install it with: npm install ${spec.packageName}`,
        { cause: err },
      );
    }
    if (isSbxError(err)) throw err;
    throw new ProviderLoadError(
      specifier,
      `Failed to import sandbox provider package "${spec.moduleName}": ${errorMessage(err)}`,
      { cause: err },
    );
  }

  const exports = exportsOf(mod);
  let exportName: string;
  let value: unknown;
  if (spec.exportName !== undefined) {
    exportName = spec.exportName;
    if (!(exportName in exports) || exports[exportName] === undefined) {
      throw new ProviderLoadError(
        specifier,
        `Package "${spec.moduleName}" does not export "${exportName}"`,
      );
    }
    value = exports[exportName];
  } else {
    [exportName, value] = pickDefaultExport(specifier, spec.moduleName, exports);
  }

  if (value === SandboxProvider) {
    throw new ProviderLoadError(
      specifier,
      `"${exportName}" of "${spec.moduleName}" is the abstract SandboxProvider, not a provider implementation`,
    );
  }
  let kind: 'class' | 'factory';
  if (isProviderClass(value)) kind = 'class';
  else if (typeof value === 'function' && !isClassSyntax(value)) kind = 'factory';
  else {
    throw new ProviderLoadError(
      specifier,
      `"${exportName}" of "${spec.moduleName}" is not a SandboxProvider subclass or a factory function`,
    );
  }
  const target = value as SandboxProviderClass | SandboxProviderFactory;

  return Object.freeze({
    specifier,
    packageName: spec.packageName,
    exportName,
    kind,
    target,
    async create(init: SandboxProviderInit): Promise<SandboxProvider> {
      const made =
        kind === 'class'
          ? new (target as SandboxProviderClass)(init)
          : await (target as SandboxProviderFactory)(init);
      if (!looksLikeProvider(made)) {
        throw new ProviderLoadError(
          specifier,
          `Factory "${exportName}" of "${spec.moduleName}" returned ${made === null ? 'null' : typeof made}, not a SandboxProvider`,
        );
      }
      return made;
    },
  });
}
