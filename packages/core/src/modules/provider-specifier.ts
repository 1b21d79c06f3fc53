/**
 * The `use:` value that names a sandbox provider: an npm package (optionally a subpath export of
 * it) and optionally, after `#`, the name of one export. Parsed in one place so the configuration
 * schema and the loader cannot disagree about what is valid.
 */
export interface ProviderSpecifier {
  /** The text as written, e.g. `@sbx/aio#AioSandboxProvider`. */
  readonly specifier: string;
  /** What `import()` receives, e.g. `@sbx/aio` or `my-pkg/providers`. */
  readonly moduleName: string;
  /** The npm package that must be installed, e.g. `@sbx/aio` (subpath removed). */
  readonly packageName: string;
  /** The export after `#`, if any. */
  readonly exportName: string | undefined;
}

export const DEFAULT_PROVIDER_SPECIFIER = '@sbx/local';

// npm package names are lower case, may be scoped, and never start with `.` or `_`; a subpath may
// follow. Uppercase is allowed in subpaths because package `exports` keys may contain it.
const NAME = '[a-z0-9~-][a-z0-9._~-]*';
const MODULE_RE = new RegExp(`^(?:@${NAME}/)?${NAME}(?:/[A-Za-z0-9._~-]+)*$`);
const EXPORT_RE = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Why `specifier` is not a valid provider specifier, or `undefined` when it is. */
export function providerSpecifierProblem(specifier: string): string | undefined {
  if (specifier.trim() !== specifier || specifier === '') {
    return 'must be a non-empty npm package name without surrounding spaces';
  }
  const hash = specifier.indexOf('#');
  const moduleName = hash === -1 ? specifier : specifier.slice(0, hash);
  const exportName = hash === -1 ? undefined : specifier.slice(hash + 1);
  if (!MODULE_RE.test(moduleName)) {
    return `"${moduleName}" is not an npm package name (expected e.g. "@sbx/local" or "@sbx/aio#AioSandboxProvider")`;
  }
  if (exportName !== undefined && !EXPORT_RE.test(exportName)) {
    return `"#${exportName}" is not a JavaScript export name`;
  }
  return undefined;
}

/** Splits a specifier; returns `undefined` when it is not valid (see `providerSpecifierProblem`). */
export function parseProviderSpecifier(specifier: string): ProviderSpecifier | undefined {
  if (providerSpecifierProblem(specifier) !== undefined) return undefined;
  const hash = specifier.indexOf('#');
  const moduleName = hash === -1 ? specifier : specifier.slice(0, hash);
  const parts = moduleName.split('/');
  const packageName = moduleName.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? '');
  return {
    specifier,
    moduleName,
    packageName,
    exportName: hash === -1 ? undefined : specifier.slice(hash + 1),
  };
}
