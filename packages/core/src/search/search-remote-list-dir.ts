import { shellQuote } from '../command/shell-quote.js';
import { shouldIgnorePath } from './search-ignore.js';
import { DEFAULT_LIST_DIR_DEPTH, REMOTE_LIST_DIR_LIMIT } from './search-limits.js';
import { requireCount } from './search-walk.js';
import {
  SWAP_NUL_AND_NEWLINE,
  entries,
  joinRoot,
  normalizeRoot,
  pruneExpression,
  relativeTo,
  splitHeader,
} from './search-remote.js';
import type { RemoteSearchPlan } from './search-remote.js';

// Remote tree listing: two `find` sections (directories, then files), each capped, shown like the
// local listing (see the protocol in `search-remote.ts`).

export interface RemoteListDirOptions {
  /** Default 2. */
  maxDepth?: number;
}

/**
 * The shell command for a remote tree listing: directories, then (after an empty line) files,
 * each section capped at 500 entries. Symbolic links are not listed remotely.
 */
export function buildListDirCommand(root: string, options: RemoteListDirOptions = {}): string {
  const maxDepth = requireCount('maxDepth', options.maxDepth ?? DEFAULT_LIST_DIR_DEPTH, 1);
  const r = shellQuote(normalizeRoot(root));
  const section = (type: 'd' | 'f') =>
    `find -H "$R" -mindepth 1 -maxdepth ${maxDepth} ${pruneExpression()} -type ${type} -print0 2>/dev/null | ${SWAP_NUL_AND_NEWLINE} | head -n ${REMOTE_LIST_DIR_LIMIT}`;
  return [
    `R=${r}`,
    `if [ -d "$R" ]; then echo sbx:dir; ${section('d')}; echo; ${section('f')}`,
    'elif [ -e "$R" ]; then echo sbx:other',
    'else echo sbx:missing; fi',
  ].join('; ');
}

/**
 * Sorted listing (directories with a trailing `/`) from `buildListDirCommand` output; `[]` for a
 * missing or non-directory root.
 */
export function parseListDirOutput(stdout: string, root: string): string[] {
  const base = normalizeRoot(root);
  const { kind, body } = splitHeader(stdout);
  if (kind === 'missing' || kind === 'other' || kind === 'file') return [];
  const lines = entries(body);
  const gap = lines.indexOf('');
  const dirs = gap === -1 ? lines : lines.slice(0, gap);
  const files = gap === -1 ? [] : lines.slice(gap + 1);
  const out = new Set<string>();
  for (const [list, suffix] of [
    [dirs, '/'],
    [files, ''],
  ] as const) {
    for (const entry of list) {
      const rel = relativeTo(base, entry);
      if (rel === undefined || shouldIgnorePath(rel)) continue;
      out.add(joinRoot(base, rel) + suffix);
    }
  }
  return [...out].sort();
}

export function planRemoteListDir(
  root: string,
  options: RemoteListDirOptions = {},
): RemoteSearchPlan<string[]> {
  return {
    command: buildListDirCommand(root, options),
    parse: (stdout) => parseListDirOutput(stdout, root),
  };
}
