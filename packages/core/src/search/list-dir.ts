import type { Dirent } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import { DEFAULT_LIST_DIR_DEPTH } from './search-limits.js';
import { shouldIgnoreName } from './search-ignore.js';
import { errnoCode, readVerifiedDirectory, requireCount } from './search-walk.js';
import { throwIfAborted } from '../async/throw-if-aborted.js';

export interface ListDirTreeOptions {
  /** 1 = children only; default 2 (children and grandchildren). */
  maxDepth?: number;
  signal?: AbortSignal;
  /** Receives a debug line for every entry skipped because it could not be read or resolved. */
  logger?: Logger;
}

const caseInsensitiveNames = process.platform === 'win32';

function isInside(realRoot: string, target: string): string | undefined {
  const rel = path.relative(realRoot, target);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
    return undefined;
  }
  return rel;
}

/**
 * A tree listing below `root`, as sorted absolute host paths under `root` as given; directories
 * end with `/`, the root itself is not listed. A missing or non-directory root gives `[]`.
 *
 * Ignored names are skipped and not descended. A symbolic link is resolved: if its target lies
 * inside the root it is listed under the *target's* path (with `/` for a directory) and never
 * descended; otherwise it is skipped — a listing can never reveal or enter anything outside the
 * root. Unreadable directories are skipped (logged at debug level). Duplicates (a target also
 * reached directly) are listed once.
 */
export async function listDirTree(
  root: string,
  options: ListDirTreeOptions = {},
): Promise<string[]> {
  const maxDepth = requireCount('maxDepth', options.maxDepth ?? DEFAULT_LIST_DIR_DEPTH, 1);
  const logger = options.logger ?? silentLogger;
  const outputRoot = path.resolve(root);
  let realRoot: string;
  try {
    realRoot = await realpath(outputRoot);
    if (!(await stat(realRoot)).isDirectory()) return [];
  } catch (err) {
    logger.debug('listDir root is not a readable directory', {
      path: outputRoot,
      code: errnoCode(err),
    });
    return [];
  }
  const out = new Set<string>();

  const visit = async (dir: string, depth: number): Promise<void> => {
    throwIfAborted(options.signal);
    let entries: Dirent[];
    try {
      // Through a verified descriptor: a directory swapped for a link is not listed.
      entries = await readVerifiedDirectory(dir);
    } catch (err) {
      logger.debug('listDir skipped an unreadable directory', { path: dir, code: errnoCode(err) });
      return;
    }
    const subdirs: string[] = [];
    for (const entry of entries) {
      if (shouldIgnoreName(entry.name, { caseInsensitive: caseInsensitiveNames })) continue;
      const full = path.join(dir, entry.name);
      if (entry.isSymbolicLink()) {
        try {
          const target = await realpath(full);
          const rel = isInside(realRoot, target);
          if (rel === undefined) continue;
          const isDir = (await stat(target)).isDirectory();
          out.add(path.join(outputRoot, rel) + (isDir ? '/' : ''));
        } catch (err) {
          logger.debug('listDir skipped an unresolvable link', {
            path: full,
            code: errnoCode(err),
          });
        }
        continue;
      }
      const rel = path.relative(realRoot, full);
      if (entry.isDirectory()) {
        out.add(`${path.join(outputRoot, rel)}/`);
        if (depth < maxDepth) subdirs.push(full);
      } else {
        out.add(path.join(outputRoot, rel));
      }
    }
    for (const sub of subdirs) await visit(sub, depth + 1);
  };

  await visit(realRoot, 1);
  return [...out].sort();
}
