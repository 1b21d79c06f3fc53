import picomatch from 'picomatch';
import { InvalidArgumentError } from './errors.js';

/** A compiled glob: tests a `/`-separated path relative to the search root. */
export type GlobMatcher = (relativePath: string) => boolean;

export interface GlobMatchOptions {
  /** Default true: `*.PY` does not match `x.py`, as on POSIX filesystems. */
  caseSensitive?: boolean;
}

/**
 * Compiles a search glob once, for use on many paths.
 *
 * - A pattern without `/` matches the last segment (the name) at any depth: `*.py` matches
 *   `a/b/c.py`.
 * - A pattern with `/` matches the whole relative path, and `**` spans any number of directories
 *   (zero included): `src/**\/*.ts` matches `src/a.ts` and `src/x/y/b.ts`, `**\/*.py` matches
 *   `app.py`. Such a pattern is anchored at the search root: `src/*.py` does not match
 *   `a/src/x.py`.
 * - `*` and `?` never cross `/` and do match a leading dot (fnmatch rules); `[...]`, `[!...]`,
 *   `{a,b}` and extglobs follow picomatch. A leading `./` is dropped, trailing `/` ignored.
 *
 * An empty or absolute pattern is refused with `InvalidArgumentError`: results are relative to
 * the search root, so such a pattern could never match and would only hide the mistake.
 */
export function compileGlob(pattern: string, options: GlobMatchOptions = {}): GlobMatcher {
  if (typeof pattern !== 'string' || pattern.trim() === '') {
    throw new InvalidArgumentError('glob pattern must not be empty');
  }
  if (pattern.startsWith('/')) {
    throw new InvalidArgumentError(
      `glob pattern must be relative to the search path, got absolute pattern '${pattern}'`,
    );
  }
  let normalized = pattern;
  while (normalized.startsWith('./')) normalized = normalized.slice(2);
  normalized = normalized.replace(/\/+$/, '');
  if (normalized === '') {
    throw new InvalidArgumentError(`glob pattern '${pattern}' names no file`);
  }
  const regex = picomatch.makeRe(normalized, {
    dot: true,
    posix: true,
    windows: false,
    nocase: options.caseSensitive === false,
  });
  if (!normalized.includes('/')) {
    return (relativePath) => regex.test(relativePath.slice(relativePath.lastIndexOf('/') + 1));
  }
  return (relativePath) => regex.test(relativePath);
}

/** One-off form of `compileGlob(pattern)(relativePath)`. */
export function pathMatchesGlob(
  pattern: string,
  relativePath: string,
  options: GlobMatchOptions = {},
): boolean {
  return compileGlob(pattern, options)(relativePath);
}

/**
 * The part of a glob that `find -name` can test on its own, or `undefined`. Remote search pushes
 * it into `find` so only plausible names cross the wire; it is a necessary condition (the full
 * pattern is still applied to what comes back), so it must only be returned when fnmatch and
 * picomatch agree on it: no braces, extglobs, negation, escapes or `**`.
 */
export function globNameFilter(pattern: string): string | undefined {
  const normalized = pattern.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
  const last = normalized.slice(normalized.lastIndexOf('/') + 1);
  if (last === '' || last.includes('**')) return undefined;
  if (/[{}()\\!+@]/.test(last)) return undefined;
  return last;
}
