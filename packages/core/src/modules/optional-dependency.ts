import { MissingDependencyError } from '../errors/errors.js';

type Importer = (specifier: string) => Promise<unknown>;

const nativeImport: Importer = (s) => import(s);

// One cache per importer, so a test that injects its own importer never sees modules another
// importer loaded (and vice versa).
const caches = new WeakMap<Importer, Map<string, Promise<unknown>>>();

/**
 * True when `err` says the module `name` itself cannot be found. A missing file or transitive
 * dependency inside an installed package is a broken install, not a missing package, and must
 * surface as-is; both Node's ESM (`ERR_MODULE_NOT_FOUND`) and CJS (`MODULE_NOT_FOUND`) loaders
 * quote the specifier they could not resolve.
 */
export function isModuleNotFoundFor(err: unknown, name: string): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return err.message.includes(`'${name}'`) || err.message.includes(`"${name}"`);
}

/**
 * The npm package a module specifier belongs to: `@langchain/core/tools` → `@langchain/core`,
 * `e2b` → `e2b`. Node reports a missing package by this name, and it is what `npm install` takes.
 */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/**
 * Imports an optional vendor SDK on first use. Provider packages list their SDK as an optional peer
 * dependency and call this from their constructor/factory, so importing a provider package never
 * loads (or requires) the SDK until that provider is actually built.
 *
 * @param name the module to import: a package name (`dockerode`) or a subpath of one
 *   (`@langchain/core/tools`); a missing install names the package
 * @param requiredBy who needs it, used in the error message, e.g. `@sbx/aio LocalContainerBackend`
 * @param importer overridable for tests; defaults to a native dynamic `import()`
 */
export async function loadOptionalDependency<T = unknown>(
  name: string,
  requiredBy: string,
  importer: Importer = nativeImport,
): Promise<T> {
  const cache = caches.get(importer) ?? new Map<string, Promise<unknown>>();
  caches.set(importer, cache);
  let pending = cache.get(name);
  if (!pending) {
    // Async wrapper: an importer that throws synchronously is handled like a rejected import.
    const attempt = (async () => importer(name))();
    pending = attempt;
    cache.set(name, attempt);
    // A failed import is not cached: installing the package later in a long-lived process works.
    // Only this attempt's entry is removed, never a newer one.
    attempt.catch(() => {
      if (cache.get(name) === attempt) cache.delete(name);
    });
  }
  try {
    return (await pending) as T;
  } catch (err) {
    const packageName = packageNameOf(name);
    if (isModuleNotFoundFor(err, name) || isModuleNotFoundFor(err, packageName)) {
      throw new MissingDependencyError(packageName, requiredBy, { cause: err });
    }
    throw err;
  }
}

/** CommonJS/ESM interop: a default export if the module has one, else the namespace. */
export function interopDefault<T>(mod: unknown): T {
  if (mod && typeof mod === 'object' && 'default' in mod && (mod as { default: unknown }).default) {
    return (mod as { default: T }).default;
  }
  return mod as T;
}
