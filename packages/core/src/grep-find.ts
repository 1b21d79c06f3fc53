import path from 'node:path';
import { SandboxFileError, SearchTimeoutError } from './errors.js';
import type { GlobMatcher } from './glob-match.js';
import { compileGlob } from './glob-match.js';
import { truncateLine } from './grep-line-summary.js';
import { literalPrefilter } from './grep-literal.js';
import { silentLogger } from './logger.js';
import { compileGrepPattern } from './grep-pattern.js';
import type { GrepMatch, GrepResult } from './sandbox.js';
import {
  BINARY_SNIFF_BYTES,
  DEFAULT_GREP_MAX_RESULTS,
  DEFAULT_MAX_FILE_SIZE_BYTES,
  GREP_BATCH_FILES,
  MAX_GREP_LINE_LENGTH,
} from './search-limits.js';
import type { FileScanResult, SearchWorkerPool } from './search-worker-pool.js';
import { searchWorkerPool } from './search-worker-pool.js';
import type { LocalSearchOptions, SearchRoot } from './search-walk.js';
import { requireCount, resolveSearchRoot, searchTimeoutOf, walkSearchTree } from './search-walk.js';
import { throwIfAborted } from './throw-if-aborted.js';

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
  /** Batches of files in flight at once. Default 2. */
  concurrency?: number;
  /** Where matching runs; default: the process-wide pool. */
  pool?: SearchWorkerPool;
}

interface Candidate {
  realPath: string;
  outputPath: string;
}

async function* candidates(
  root: SearchRoot,
  glob: GlobMatcher | undefined,
  options: FindGrepOptions,
): AsyncGenerator<Candidate, void, undefined> {
  if (root.stats.isFile()) {
    // A single-file root is filtered by its name, the way the caller spelled it.
    if (!glob || glob(path.basename(root.outputRoot))) {
      yield { realPath: root.realRoot, outputPath: root.outputRoot };
    }
    return;
  }
  for await (const entry of walkSearchTree(root, 'grep', options)) {
    if (entry.isDirectory) continue;
    if (glob && !glob(entry.relativePath)) continue;
    yield {
      realPath: entry.realPath,
      outputPath: path.join(root.outputRoot, entry.relativePath),
    };
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
  const concurrency = requireCount('concurrency', options.concurrency ?? 2, 1);
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
  const task = {
    kind: 'scan-files' as const,
    regex: { source: regex.source, flags: regex.flags },
    literal: literalPrefilter(regex.source, regex.flags),
    wanted,
    root: searchRoot.realRoot,
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
    done: FileScanResult[];
    consumed: number;
    hits: Promise<FileScanResult[]>;
  }
  const window: Batch[] = [];
  /** Takes in the finished files of `batch` in order; true once `wanted` lines matched. */
  const consume = (batch: Batch): boolean => {
    for (; batch.consumed < batch.done.length; batch.consumed++) {
      const f = batch.consumed;
      const scanned = batch.done[f]!;
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
        if (consume(batch) || batch.done.length < batch.files.length) break;
      }
      return new SearchTimeoutError<GrepResult>('grep', timeoutMs, {
        matches: matches.slice(0, maxResults),
        truncated: true,
      });
    },
  };
  return pool.withWorker(deadline, async (worker) => {
    const signal = options.signal
      ? AbortSignal.any([options.signal, worker.signal])
      : worker.signal;
    const source = candidates(searchRoot, glob, { ...options, signal });
    let exhausted = false;
    const refill = async () => {
      while (!exhausted && window.length < concurrency) {
        const files: string[] = [];
        const outputPaths: string[] = [];
        while (files.length < GREP_BATCH_FILES) {
          const next = await source.next();
          if (next.done) {
            exhausted = true;
            break;
          }
          files.push(next.value.realPath);
          outputPaths.push(next.value.outputPath);
        }
        if (files.length === 0) break;
        const done: FileScanResult[] = [];
        const hits = worker.run({ ...task, files }, (_index, result) => done.push(result));
        // Observed at once: a batch still in flight when the search ends must not go unhandled.
        hits.catch(() => undefined);
        window.push({ files, outputPaths, done, consumed: 0, hits });
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
  });
}
