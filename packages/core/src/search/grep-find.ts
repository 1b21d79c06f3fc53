import path from 'node:path';
import { SandboxFileError, SearchTimeoutError } from '../errors/errors.js';
import type { GlobMatcher } from './glob-match.js';
import { compileGlob } from './glob-match.js';
import { truncateLine } from './grep-line-summary.js';
import { literalPrefilter } from './grep-literal.js';
import { silentLogger } from '../logging/logger.js';
import { compileGrepPattern } from './grep-pattern.js';
import type { GrepMatch, GrepResult } from '../contract/sandbox.js';
import {
  BINARY_SNIFF_BYTES,
  DEFAULT_GREP_MAX_RESULTS,
  DEFAULT_MAX_FILE_SIZE_BYTES,
  GREP_BATCH_FILES,
  MAX_GREP_LINE_LENGTH,
} from './search-limits.js';
import type {
  FileScanResults,
  SearchWorkerHandle,
  SearchWorkerPool,
} from './search-worker-pool.js';
import { searchWorkerPool } from './search-worker-pool.js';
import type { LocalSearchOptions, SearchRoot } from './search-walk.js';
import {
  joinOutput,
  walkRealPath,
  requireCount,
  resolveSearchRoot,
  searchTimeoutOf,
  walkSearchTreeBatches,
} from './search-walk.js';
import { throwIfAborted } from '../async/throw-if-aborted.js';

export interface FindGrepOptions extends LocalSearchOptions {
  /** Only search files whose root-relative path (the name, for a single-file root) matches. */
  glob?: string | null;
  literal?: boolean;
  /** Default false. */
  caseSensitive?: boolean;
  /** Default 100. */
  maxResults?: number;
  /** Files strictly larger are skipped. Default 1,000,000 bytes. */
  maxFileSize?: number;
  /** Batches of files in flight at once (spread over the search's workers). Default 4. */
  concurrency?: number;
  /** Where matching runs; default: the process-wide pool. */
  pool?: SearchWorkerPool;
}

interface Candidate {
  realPath: string;
  outputPath: string;
}

function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** Files to search, in walk order, a run at a time (see `walkSearchTreeBatches`). */
async function* candidates(
  root: SearchRoot,
  glob: GlobMatcher | undefined,
  options: FindGrepOptions,
  worker: SearchWorkerHandle,
): AsyncGenerator<Candidate[], void, undefined> {
  if (root.stats.isFile()) {
    // A single-file root is filtered by its name, the way the caller spelled it.
    if (!glob || glob(path.basename(root.outputRoot))) {
      yield [{ realPath: root.realRoot, outputPath: root.outputRoot }];
    }
    return;
  }
  for await (const batch of walkSearchTreeBatches(root, 'grep', options, worker)) {
    const files: Candidate[] = [];
    for (const [relativePath, isDirectory] of batch) {
      if (isDirectory) continue;
      if (glob && !glob(relativePath)) continue;
      files.push({
        realPath: walkRealPath(root, relativePath),
        outputPath: joinOutput(root.outputRoot, relativePath),
      });
    }
    if (files.length > 0) yield files;
  }
}

/**
 * Line matches of `pattern` in one text file or in a directory tree, in `compareRelativePaths`
 * order then by line number. Skipped: ignored names (not descended), symbolic links (even ones
 * pointing inside the root), special files, files larger than `maxFileSize`, binary files (NUL in
 * the first 8 KiB), lines longer than 2,000 code points, unreadable files. Text is decoded as
 * UTF-8 with replacement characters.
 *
 * The pattern (and glob) compile before any I/O, so a bad one throws `InvalidArgumentError`
 * without touching the disk. `truncated` is true exactly when more than `maxResults` lines match.
 *
 * The walk runs here; reading and matching run on a search worker thread (`SearchWorkerPool`), in
 * batches, so no pattern can stall the event loop, however it backtracks. The whole search runs
 * under `timeoutMs` (default 10 s): past it the worker is terminated and the search rejects with
 * `SearchTimeoutError`, whose `partial` holds the matches found so far. Files without the
 * pattern's required literal (`requiredLiteral`) are rejected by one linear scan. Paths are
 * absolute host paths under `root` as given.
 */
export async function findGrepMatches(
  root: string,
  pattern: string,
  options: FindGrepOptions = {},
): Promise<GrepResult> {
  const regex = compileGrepPattern(pattern, options);
  const glob = options.glob == null ? undefined : compileGlob(options.glob);
  const maxResults = requireCount('maxResults', options.maxResults ?? DEFAULT_GREP_MAX_RESULTS, 1);
  const maxFileSize = requireCount(
    'maxFileSize',
    options.maxFileSize ?? DEFAULT_MAX_FILE_SIZE_BYTES,
    0,
  );
  const concurrency = requireCount('concurrency', options.concurrency ?? 4, 1);
  const timeoutMs = searchTimeoutOf(options);
  const logger = options.logger ?? silentLogger;
  throwIfAborted(options.signal);

  const searchRoot = await resolveSearchRoot(root, 'grep', options.displayPath);
  if (!searchRoot.stats.isFile() && !searchRoot.stats.isDirectory()) {
    throw new SandboxFileError(`Not a regular file or directory: ${searchRoot.shown}`, {
      path: searchRoot.shown,
      operation: 'grep',
      kind: 'ENOTDIR',
    });
  }

  // One more than the limit decides `truncated` without a second pass.
  const wanted = maxResults + 1;
  const matches: GrepMatch[] = [];
  const literal = literalPrefilter(regex.source, regex.flags);
  const task = {
    kind: 'scan-files' as const,
    regex: { source: regex.source, flags: regex.flags },
    literal,
    literalAscii: literal !== undefined && isAscii(literal.source),
    wanted,
    // Files are opened through their verified parent directory: for a single-file root, its own.
    root: searchRoot.stats.isFile() ? path.dirname(searchRoot.realRoot) : searchRoot.realRoot,
    maxFileSize,
    maxLineLength: MAX_GREP_LINE_LENGTH,
    sniffBytes: BINARY_SNIFF_BYTES,
  };
  const pool = options.pool ?? searchWorkerPool();
  // Batches in flight at once: the walk lists the next while the worker scans the last. Each
  // file's result arrives on its own (`done`), so a deadline keeps whatever was scanned before it.
  interface Batch {
    files: string[];
    outputPaths: string[];
    /** Files with hits or errors, as they arrived: `[index, result]`, in file order. */
    done: FileScanResults;
    consumed: number;
    complete: boolean;
    hits: Promise<FileScanResults>;
  }
  const window: Batch[] = [];
  /** Takes in the finished files of `batch` in order; true once `wanted` lines matched. */
  const consume = (batch: Batch): boolean => {
    for (; batch.consumed < batch.done.length; batch.consumed++) {
      const [f, scanned] = batch.done[batch.consumed]!;
      if (typeof scanned === 'string') {
        logger.debug('grep skipped an unreadable file', { path: batch.files[f], code: scanned });
        continue;
      }
      for (const [lineNumber, line] of scanned) {
        matches.push({ path: batch.outputPaths[f]!, lineNumber, line: truncateLine(line) });
        if (matches.length >= wanted) return true;
      }
    }
    return false;
  };
  const deadline = {
    timeoutMs,
    signal: options.signal,
    onTimeout: () => {
      // Results stay in walk order: only complete batches, then the finished prefix of the next.
      for (const batch of window) {
        if (consume(batch) || !batch.complete) break;
      }
      return new SearchTimeoutError<GrepResult>('grep', timeoutMs, {
        matches: matches.slice(0, maxResults),
        truncated: true,
      });
    },
  };
  // Two workers when free: reading and matching run on both cores, batches stay in walk order.
  return pool.withWorker(
    deadline,
    async (worker) => {
      const signal = options.signal
        ? AbortSignal.any([options.signal, worker.signal])
        : worker.signal;
      const source = candidates(searchRoot, glob, { ...options, signal }, worker);
      let exhausted = false;
      let pending: Candidate[] = [];
      const refill = async () => {
        while (!exhausted && window.length < concurrency) {
          while (pending.length < GREP_BATCH_FILES && !exhausted) {
            const next = await source.next();
            if (next.done) exhausted = true;
            else pending = pending.length === 0 ? next.value : pending.concat(next.value);
          }
          const taken = pending.slice(0, GREP_BATCH_FILES);
          pending = pending.slice(GREP_BATCH_FILES);
          if (taken.length === 0) break;
          const files = taken.map((c) => c.realPath);
          const outputPaths = taken.map((c) => c.outputPath);
          const done: FileScanResults = [];
          const batch: Batch = {
            files,
            outputPaths,
            done,
            consumed: 0,
            complete: false,
            hits: worker.run({ ...task, files }, (index, result) => done.push([index, result])),
          };
          batch.hits.then(
            () => (batch.complete = true),
            // Observed at once: a batch still in flight when the search ends must not go unhandled.
            () => undefined,
          );
          window.push(batch);
        }
      };
      try {
        await refill();
        while (window.length > 0) {
          throwIfAborted(options.signal);
          const head = window[0]!;
          await head.hits;
          if (consume(head)) return { matches: matches.slice(0, maxResults), truncated: true };
          window.shift();
          await refill();
        }
        return { matches, truncated: false };
      } finally {
        await source.return(undefined);
      }
    },
    { parallel: 2 },
  );
}
