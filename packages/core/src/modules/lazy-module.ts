import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);

/**
 * A dependency of `@sbx/core` loaded on first use instead of with the package. The cold import of
 * `@sbx/core` is paid by every host (and by `sbx --help`); a dependency that only some calls need
 * (a glob matcher, an LRU cache, a mutex, the schema library) is paid by those calls. Resolved from
 * `@sbx/core` itself, so it is always core's own pinned copy.
 */
export function lazyModule<T>(specifier: string): () => T {
  let loaded: { module: T } | undefined;
  return () => (loaded ??= { module: requireHere(specifier) as T }).module;
}

/** A value built on first use and kept. */
export function lazily<T>(build: () => T): () => T {
  let built: { value: T } | undefined;
  return () => (built ??= { value: build() }).value;
}
