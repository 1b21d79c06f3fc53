import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { SandboxFileError } from './errors.js';
import type { GlobMatcher } from './glob-match.js';
import { compileGlob } from './glob-match.js';
import { truncateLine } from './grep-line-summary.js';
import { compileGrepPattern } from './grep-pattern.js';
import type { Logger } from './logger.js';
import { silentLogger } from './logger.js';
import type { GrepMatch, GrepResult } from './sandbox.js';
import {
  BINARY_SNIFF_BYTES,
  DEFAULT_GREP_MAX_RESULTS,
  DEFAULT_MAX_FILE_SIZE_BYTES,
  MAX_GREP_LINE_LENGTH,
} from './search-limits.js';
import type { LocalSearchOptions, SearchRoot } from './search-walk.js';
import { errnoCode, requireCount, resolveSearchRoot, walkSearchTree } from './search-walk.js';
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
  /** Files read at once. Default 8. Each holds at most `maxFileSize` bytes in memory. */
  concurrency?: number;
}

interface Candidate {
  realPath: string;
  outputPath: string;
}

interface FileHits {
  lineNumber: number;
  line: string;
}

// O_NOFOLLOW: a file swapped for a symlink after the listing is refused instead of read through.
// O_NONBLOCK: one swapped for a FIFO cannot hang the search (the type check below then skips it).
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

const LINE_BREAK = /\r\n|\r|\n/;
const LOOKAROUND = /\(\?<?[=!]/;

/**
 * A whole-file test that every file with a matching line passes, so most files are rejected with
 * one scan instead of one per line. With the `m` flag, anchors see line boundaries and the only
 * way it can differ from the per-line test is matching *more* (across a line break), which is
 * safe for a filter. Lookarounds can see past a line's end, so they get no prefilter.
 */
function wholeFilePrefilter(regex: RegExp): RegExp | undefined {
  if (LOOKAROUND.test(regex.source)) return undefined;
  return new RegExp(regex.source, `${regex.flags}m`);
}

async function readWhole(handle: FileHandle, size: number): Promise<Buffer> {
  // Read what fstat announced and no further: a file growing meanwhile cannot blow the bound.
  const buffer = Buffer.allocUnsafe(size);
  let filled = 0;
  while (filled < size) {
    const { bytesRead } = await handle.read(buffer, filled, size - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

/**
 * The matching lines of one file, at most `limit`. Whole-file reads are deliberate: files are
 * capped at `maxFileSize` (1 MB), one read call beats a line stream by a wide margin, and lines
 * must be split by `\r`, `\n` and `\r\n` alike, which a single split does.
 */
async function scanFile(
  realPath: string,
  regex: RegExp,
  prefilter: RegExp | undefined,
  limit: number,
  maxFileSize: number,
  logger: Logger,
): Promise<FileHits[]> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(realPath, OPEN_FLAGS);
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > maxFileSize) return [];
    const buffer = await readWhole(handle, stats.size);
    if (buffer.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return [];
    const text = buffer.toString('utf8');
    if (prefilter && !prefilter.test(text)) return [];
    const lines = text.split(LINE_BREAK);
    const last = lines.length - 1;
    // A text ending in a line break leaves an empty final piece that is not a line.
    const count = lines[last] === '' ? last : lines.length;
    const hits: FileHits[] = [];
    for (let i = 0; i < count; i++) {
      const line = lines[i]!;
      // The length limit counts the line break, as the contract measures it.
      if (line.length + (i < last ? 1 : 0) > MAX_GREP_LINE_LENGTH) continue;
      if (!regex.test(line)) continue;
      hits.push({ lineNumber: i + 1, line: truncateLine(line) });
      if (hits.length >= limit) break;
    }
    return hits;
  } catch (err) {
    logger.debug('grep skipped an unreadable file', { path: realPath, code: errnoCode(err) });
    return [];
  } finally {
    await handle?.close().catch(() => undefined);
  }
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
 * the first 8 KiB), lines longer than 2,000 characters, unreadable files (logged at debug level).
 * Text is decoded as UTF-8 with replacement characters.
 *
 * The pattern (and glob) compile before any I/O, so a bad one throws `InvalidArgumentError`
 * without touching the disk. `truncated` is true exactly when more than `maxResults` lines match.
 * Files are read a few at a time, in order, and the search stops reading once the limit is
 * passed. Paths are absolute host paths under `root` as given.
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
  const concurrency = requireCount('concurrency', options.concurrency ?? 8, 1);
  const logger = options.logger ?? silentLogger;
  const prefilter = wholeFilePrefilter(regex);
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
  const source = candidates(searchRoot, glob, options);
  const window: { outputPath: string; hits: Promise<FileHits[]> }[] = [];
  let exhausted = false;
  const refill = async () => {
    while (!exhausted && window.length < concurrency) {
      const next = await source.next();
      if (next.done) {
        exhausted = true;
        break;
      }
      const { realPath, outputPath } = next.value;
      window.push({
        outputPath,
        hits: scanFile(realPath, regex, prefilter, wanted, maxFileSize, logger),
      });
    }
  };

  try {
    await refill();
    while (window.length > 0) {
      throwIfAborted(options.signal);
      const head = window.shift()!;
      for (const hit of await head.hits) {
        matches.push({ path: head.outputPath, lineNumber: hit.lineNumber, line: hit.line });
        if (matches.length >= wanted) {
          return { matches: matches.slice(0, maxResults), truncated: true };
        }
      }
      await refill();
    }
    return { matches, truncated: false };
  } finally {
    await source.return(undefined);
    // Reads already started close their own handles; wait so none outlives the call.
    await Promise.all(window.map((w) => w.hits));
  }
}
