import { compileGlob } from './glob-match.js';
import type { GlobResult } from './sandbox.js';
import { DEFAULT_GLOB_MAX_RESULTS } from './search-limits.js';
import type { LocalSearchOptions } from './search-walk.js';
import {
  joinOutput,
  notADirectoryError,
  requireCount,
  resolveSearchRoot,
  searchTimeoutOf,
  walkSearchTreeBatches,
} from './search-walk.js';
import { SearchTimeoutError } from './errors.js';
import { throwIfAborted } from './throw-if-aborted.js';

export interface FindGlobOptions extends LocalSearchOptions {
  /** Also report matching directories. Default false. */
  includeDirs?: boolean;
  /** Default 200. */
  maxResults?: number;
}

/**
 * Paths below the directory `root` whose root-relative path matches `pattern` (see
 * `compileGlob`), in `compareRelativePaths` order, as absolute host paths under `root` as given
 * (the caller maps them to virtual paths). Ignored names are skipped and never descended;
 * symbolic links are neither reported nor followed.
 *
 * `truncated` is true exactly when more than `maxResults` paths match: the walk looks for one
 * match past the limit and stops there. A missing root throws `SandboxFileNotFoundError`, a root
 * that is not a directory `SandboxFileError` with kind `ENOTDIR`, a bad pattern
 * `InvalidArgumentError` before any I/O. Past `timeoutMs` (default 10 s) the walk stops with
 * `SearchTimeoutError`, whose `partial` holds the paths found so far.
 */
export async function findGlobMatches(
  root: string,
  pattern: string,
  options: FindGlobOptions = {},
): Promise<GlobResult> {
  const matches = compileGlob(pattern);
  const maxResults = requireCount('maxResults', options.maxResults ?? DEFAULT_GLOB_MAX_RESULTS, 1);
  throwIfAborted(options.signal);
  const timeoutMs = searchTimeoutOf(options);
  const deadline = Date.now() + timeoutMs;
  const searchRoot = await resolveSearchRoot(root, 'glob', options.displayPath);
  if (!searchRoot.stats.isDirectory()) throw notADirectoryError(searchRoot.shown, 'glob');
  const paths: string[] = [];
  for await (const batch of walkSearchTreeBatches(searchRoot, 'glob', options)) {
    // Matching is linear, so only a huge tree can run long: the clock is read once per run.
    if (Date.now() > deadline) {
      throw new SearchTimeoutError<GlobResult>('glob', timeoutMs, { paths, truncated: true });
    }
    for (const entry of batch) {
      if (entry.isDirectory && !options.includeDirs) continue;
      if (!matches(entry.relativePath)) continue;
      paths.push(joinOutput(searchRoot.outputRoot, entry.relativePath));
      if (paths.length > maxResults) return { paths: paths.slice(0, maxResults), truncated: true };
    }
  }
  return { paths, truncated: false };
}
