import { compileGlob } from './glob-match.js';
import type { GlobResult } from '../contract/sandbox.js';
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
import { SearchTimeoutError } from '../errors/errors.js';
import type { SearchWorkerPool } from './search-worker-pool.js';
import { searchWorkerPool } from './search-worker-pool.js';
import { throwIfAborted } from '../async/throw-if-aborted.js';

export interface FindGlobOptions extends LocalSearchOptions {
  /** Also report matching directories. Default false. */
  includeDirs?: boolean;
  /** Default 200. */
  maxResults?: number;
  /** Where the walk runs; default: the process-wide pool. */
  pool?: SearchWorkerPool;
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
 * `InvalidArgumentError` before any I/O. The walk runs on a search worker; past `timeoutMs`
 * (default 10 s) it is stopped with `SearchTimeoutError`, whose `partial` holds the paths found
 * so far.
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
  const searchRoot = await resolveSearchRoot(root, 'glob', options.displayPath);
  if (!searchRoot.stats.isDirectory()) throw notADirectoryError(searchRoot.shown, 'glob');
  const paths: string[] = [];
  const pool = options.pool ?? searchWorkerPool();
  const deadline = {
    timeoutMs,
    signal: options.signal,
    onTimeout: () =>
      new SearchTimeoutError<GlobResult>('glob', timeoutMs, {
        paths: paths.slice(0, maxResults),
        truncated: true,
      }),
  };
  return pool.withWorker(deadline, async (worker) => {
    const signal = options.signal
      ? AbortSignal.any([options.signal, worker.signal])
      : worker.signal;
    for await (const batch of walkSearchTreeBatches(
      searchRoot,
      'glob',
      { ...options, signal },
      worker,
    )) {
      for (const [relativePath, isDirectory] of batch) {
        if (isDirectory && !options.includeDirs) continue;
        if (!matches(relativePath)) continue;
        paths.push(joinOutput(searchRoot.outputRoot, relativePath));
        if (paths.length > maxResults)
          return { paths: paths.slice(0, maxResults), truncated: true };
      }
    }
    return { paths, truncated: false };
  });
}
