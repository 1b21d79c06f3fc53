import { MissingDependencyError } from './errors.js';

const cache = new Map<string, Promise<unknown>>();

function isModuleNotFound(err: unknown, name: string): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  // Only the package itself being absent counts; a missing transitive file inside an installed
  // package is a broken install and must surface as-is.
  return err.message.includes(`'${name}'`) || err.message.includes(`"${name}"`);
}

/**
 * Imports an optional vendor SDK on first use. Provider packages list their SDK as an optional peer
 * dependency and call this from their constructor/factory, so importing a provider package never
 * loads (or requires) the SDK until that provider is actually built.
 *
 * @param name the npm package name, e.g. `dockerode`
 * @param requiredBy who needs it, used in the error message, e.g. `@sbx/aio LocalContainerBackend`
 * @param importer overridable for tests; defaults to a native dynamic `import()`
 */
export async function loadOptionalDependency<T = unknown>(
  name: string,
  requiredBy: string,
  importer: (specifier: string) => Promise<unknown> = (s) => import(s),
): Promise<T> {
  let pending = cache.get(name);
  if (!pending) {
    pending = importer(name);
    cache.set(name, pending);
    // A failed import is not cached: installing the package later in a long-lived process works.
    pending.catch(() => cache.delete(name));
  }
  try {
    return (await pending) as T;
  } catch (err) {
    if (isModuleNotFound(err, name))
      throw new MissingDependencyError(name, requiredBy, { cause: err });
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
