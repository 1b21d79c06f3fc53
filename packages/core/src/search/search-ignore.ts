import type picomatchModule from 'picomatch';
import { lazily, lazyModule } from '../modules/lazy-module.js';

/** Loaded on the first search, not with `@sbx/core`. */
const picomatch = lazyModule<typeof picomatchModule>('picomatch');

/**
 * Names that every search and listing skips: VCS metadata, dependency trees, build output, editor
 * and OS droppings, caches, logs, and in-flight upload staging files. Matched with fnmatch rules
 * against one path *name* at a time, files and directories alike (a file called `env` or `build`
 * is skipped too), and an ignored directory is never descended.
 */
export const IGNORE_PATTERNS: readonly string[] = Object.freeze([
  '.git',
  '.svn',
  '.hg',
  '.bzr',
  'node_modules',
  '__pycache__',
  '.venv',
  'venv',
  '.env',
  'env',
  '.tox',
  '.nox',
  '.eggs',
  '*.egg-info',
  'site-packages',
  'dist',
  'build',
  '.next',
  '.nuxt',
  '.output',
  '.turbo',
  'target',
  'out',
  '.idea',
  '.vscode',
  '*.swp',
  '*.swo',
  '*~',
  '.project',
  '.classpath',
  '.settings',
  '.DS_Store',
  'Thumbs.db',
  'desktop.ini',
  '*.lnk',
  '.cache',
  'logs',
  '*.log',
  '*.tmp',
  '*.temp',
  '.upload-*.part',
  '*.bak',
  '*.cache',
  '.coverage',
  'coverage',
  '.nyc_output',
  'htmlcov',
  '.pytest_cache',
  '.mypy_cache',
  '.ruff_cache',
]);

const WILDCARD = /[*?[]/;

/**
 * The ignore list as data: exact names (folded when case-insensitive) and one combined expression
 * for the wildcards. The search worker rebuilds the same predicate from it, so the walk it runs
 * ignores exactly what `shouldIgnoreName` ignores.
 */
export function ignoreMatcherSpec(caseInsensitive: boolean): {
  names: string[];
  source: string;
  flags: string;
  fold: boolean;
} {
  const fold = (s: string) => (caseInsensitive ? s.toLowerCase() : s);
  const names = IGNORE_PATTERNS.filter((p) => !WILDCARD.test(p)).map(fold);
  // One combined expression: the walkers ask this for every directory entry they see.
  const sources = IGNORE_PATTERNS.filter((p) => WILDCARD.test(p)).map(
    (p) =>
      picomatch().makeRe(p, { dot: true, posix: true, windows: false, nocase: caseInsensitive })
        .source,
  );
  return {
    names,
    source: sources.map((s) => `(?:${s})`).join('|'),
    flags: caseInsensitive ? 'i' : '',
    fold: caseInsensitive,
  };
}

function buildMatcher(caseInsensitive: boolean): (name: string) => boolean {
  const spec = ignoreMatcherSpec(caseInsensitive);
  const exact = new Set(spec.names);
  const combined = new RegExp(spec.source, spec.flags);
  return (name) => exact.has(spec.fold ? name.toLowerCase() : name) || combined.test(name);
}

// Built on the first search, which is when the glob matcher is loaded too.
const caseSensitiveMatcher = lazily(() => buildMatcher(false));
const caseInsensitiveMatcher = lazily(() => buildMatcher(true));

export interface IgnoreOptions {
  /**
   * Fold case before matching. Default false: names are compared case-sensitively, as on POSIX
   * filesystems (`Build` and `LOGS` are kept). Local walkers turn it on for Windows hosts.
   */
  caseInsensitive?: boolean;
}

/** True when a single path name matches any entry of `IGNORE_PATTERNS`. */
export function shouldIgnoreName(name: string, options: IgnoreOptions = {}): boolean {
  return (options.caseInsensitive ? caseInsensitiveMatcher() : caseSensitiveMatcher())(name);
}

/** True when any segment of `path` (split on `/` or `\`) is ignored. */
export function shouldIgnorePath(path: string, options: IgnoreOptions = {}): boolean {
  return path
    .split(/[/\\]/)
    .some((segment) => segment !== '' && shouldIgnoreName(segment, options));
}
