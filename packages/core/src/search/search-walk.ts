import type { Dirent, Stats } from 'node:fs';
import { constants } from 'node:fs';
import { open, readdir, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxPermissionError,
} from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import { ignoreMatcherSpec } from './search-ignore.js';
import type { SearchWorkerHandle } from './search-worker-pool.js';
import { DEFAULT_SEARCH_TIMEOUT_MS } from './search-limits.js';
import { throwIfAborted } from '../async/throw-if-aborted.js';
import { errorMessage } from '../errors/error-inspection.js';

/** Options every local search walker accepts. */
export interface LocalSearchOptions {
  signal?: AbortSignal;
  /** Receives a debug line for every directory or file skipped because it could not be read. */
  logger?: Logger;
  /**
   * The path to name in error messages instead of the host path, e.g. the caller's virtual path,
   * so a failure never shows an agent where its sandbox lives on the host.
   */
  displayPath?: string;
  /**
   * Wall clock of the whole search in milliseconds (default 10 s). Past it the search stops and
   * rejects with `SearchTimeoutError`, which carries what was found so far.
   */
  timeoutMs?: number;
}

/** The timeout a search runs under: the caller's, checked, or the default. */
export function searchTimeoutOf(options: LocalSearchOptions): number {
  return requireCount('timeoutMs', options.timeoutMs ?? DEFAULT_SEARCH_TIMEOUT_MS, 1);
}

export function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

export function requireCount(name: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new InvalidArgumentError(`${name} must be an integer of at least ${min}, got ${value}`);
  }
  return value;
}

/** Maps an errno failure on the search root to the typed error the contract promises. */
export function searchRootError(err: unknown, shown: string, operation: string): Error {
  const code = errnoCode(err);
  const options = { cause: err };
  if (code === 'ENOENT') {
    return new SandboxFileNotFoundError(
      `No such file or directory: ${shown}`,
      { path: shown, operation, kind: 'ENOENT' },
      options,
    );
  }
  if (code === 'ENOTDIR') {
    return new SandboxFileNotFoundError(
      `No such file or directory: ${shown}`,
      { path: shown, operation, kind: 'ENOTDIR' },
      options,
    );
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return new SandboxPermissionError(
      `Permission denied: ${shown}`,
      { path: shown, operation },
      options,
    );
  }
  return new SandboxFileError(
    `Cannot search ${shown}: ${code ?? errorMessage(err)}`,
    { path: shown, operation, kind: 'EIO' },
    options,
  );
}

export function notADirectoryError(shown: string, operation: string): SandboxFileError {
  return new SandboxFileError(`Not a directory: ${shown}`, {
    path: shown,
    operation,
    kind: 'ENOTDIR',
  });
}

export interface SearchRoot {
  /** The root as the caller named it, made absolute: results are reported under this path. */
  outputRoot: string;
  /** The canonical root the walk reads from. */
  realRoot: string;
  stats: Stats;
  shown: string;
}

/**
 * Resolves the search root once. Results are reported under the root *as named* (not under its
 * canonical path) so a caller that maps host paths to virtual ones can use the prefix it passed
 * in; nothing below the root is followed through a symbolic link, so both spellings name the same
 * files.
 */
export async function resolveSearchRoot(
  root: string,
  operation: string,
  displayPath: string | undefined,
): Promise<SearchRoot> {
  const outputRoot = path.resolve(root);
  const shown = displayPath ?? root;
  try {
    const realRoot = await realpath(outputRoot);
    return { outputRoot, realRoot, stats: await stat(realRoot), shown };
  } catch (err) {
    throw searchRootError(err, shown, operation);
  }
}

/**
 * `root/relativePath` by concatenation: both are already normal (an absolute resolved root, a
 * walk's `/`-joined names), and `path.join`'s normalisation was a measurable share of a walk.
 */
export function joinOutput(root: string, relativePath: string): string {
  return root.endsWith('/') ? `${root}${relativePath}` : `${root}/${relativePath}`;
}

/** One entry of a walk: its `/`-separated path relative to the root, and whether it is a directory. */
export type WalkEntry = readonly [relativePath: string, isDirectory: boolean];

/** Where a walk entry is read from: under the canonical root. */
export function walkRealPath(root: SearchRoot, relativePath: string): string {
  return root.realRoot === '/' ? `/${relativePath}` : `${root.realRoot}/${relativePath}`;
}

const caseInsensitiveNames = process.platform === 'win32';

const HAS_PROC_FD = process.platform === 'linux';
const DIRECTORY_FLAGS =
  constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0);

/**
 * The entries of `dir`, listed through a descriptor verified to be `dir` itself (Linux):
 * a directory swapped for a symbolic link after its parent was listed is refused (`ELOOP` from
 * `O_NOFOLLOW`, or a real path elsewhere), so the walk never lists what lies outside its root.
 * Elsewhere a plain `readdir` (best-effort, see the security model).
 */
export async function readVerifiedDirectory(dir: string): Promise<Dirent[]> {
  let entries: Dirent[];
  if (HAS_PROC_FD) {
    const handle = await open(dir, DIRECTORY_FLAGS);
    try {
      const fdPath = `/proc/self/fd/${handle.fd}`;
      if ((await readlink(fdPath)) !== dir) {
        throw Object.assign(new Error('directory changed while listed'), { code: 'ELOOP' });
      }
      entries = await readdir(fdPath, { withFileTypes: true });
    } finally {
      await handle.close();
    }
  } else {
    entries = await readdir(dir, { withFileTypes: true });
  }
  return entries;
}

const WALK_CHUNK_ENTRIES = 2048;
let nextWalkId = 0;

/**
 * Depth-first walk with sorted listings, yielding regular files and directories in the order of
 * `compareRelativePaths`, in chunks. The walk itself runs on the search worker (`worker`):
 * synchronous listings there cost a fraction of one async round trip per directory here, and the
 * event loop only receives the entries. Ignored names are neither yielded nor descended; symbolic
 * links and special files (FIFOs, sockets, devices) are never yielded or followed, so the walk
 * cannot leave the root and never blocks opening a FIFO; every directory is listed through a
 * verified descriptor (see `readVerifiedDirectory`). Entry types come from the listing itself: no
 * `stat` per entry. An unreadable root throws; an unreadable subdirectory is logged and skipped.
 * The consumer may stop early (`break`): the worker forgets the walk.
 */
export async function* walkSearchTreeBatches(
  root: SearchRoot,
  operation: string,
  options: LocalSearchOptions,
  worker: SearchWorkerHandle,
): AsyncGenerator<WalkEntry[], void, undefined> {
  const logger = options.logger ?? silentLogger;
  const walkId = nextWalkId++;
  const started = await worker.runPinned({
    kind: 'walk-start',
    walkId,
    root: root.realRoot,
    ignore: ignoreMatcherSpec(caseInsensitiveNames),
  });
  if (started.error !== null) {
    throw searchRootError(
      Object.assign(new Error(started.error), { code: started.error }),
      root.shown,
      operation,
    );
  }
  let done = false;
  try {
    while (!done) {
      throwIfAborted(options.signal);
      const chunk = await worker.runPinned({ kind: 'walk-next', walkId, max: WALK_CHUNK_ENTRIES });
      done = chunk.done;
      for (const [path, code] of chunk.skipped) {
        logger.debug('search skipped an unreadable directory', { path, code });
      }
      if (chunk.paths.length === 0) continue;
      // A consumer builds only the paths it needs (glob never needs the real one).
      yield chunk.paths.map((p, i): WalkEntry => [p, chunk.dirs[i] === 1]);
    }
  } finally {
    // Stopped early: the worker drops the walk's state (a killed worker has none left anyway).
    if (!done) await worker.runPinned({ kind: 'walk-end', walkId }).catch(() => undefined);
  }
}
