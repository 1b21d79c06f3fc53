import { SandboxFileError } from '../errors/errors.js';
import type { GlobResult } from '../contract/sandbox.js';
import { shellQuote } from '../command/shell-quote.js';
import { compileGlob, globNameFilter } from './glob-match.js';
import { shouldIgnorePath } from './search-ignore.js';
import { DEFAULT_GLOB_MAX_RESULTS } from './search-limits.js';
import { compareRelativePaths } from './search-order.js';
import { requireCount } from './search-walk.js';
import {
  SWAP_NUL_AND_NEWLINE,
  entries,
  joinRoot,
  lineCount,
  missingError,
  normalizeRoot,
  pruneExpression,
  relativeTo,
  remoteOutputLimit,
  splitHeader,
} from './search-remote.js';
import type { RemoteParseOptions, RemoteSearchPlan } from './search-remote.js';

// Remote glob: `find` over the root, filtered, ordered and cut like the local glob walker (see the
// protocol in `search-remote.ts`).

export interface RemoteGlobOptions {
  includeDirs?: boolean;
  /** Default 200. */
  maxResults?: number;
}

/** The shell command for a remote glob; pair it with `parseFindOutput` (or use `planRemoteGlob`). */
export function buildFindCommand(
  root: string,
  pattern: string,
  options: RemoteGlobOptions = {},
): string {
  compileGlob(pattern);
  const maxResults = requireCount('maxResults', options.maxResults ?? DEFAULT_GLOB_MAX_RESULTS, 1);
  const r = shellQuote(normalizeRoot(root));
  const type = options.includeDirs ? '\\( -type f -o -type d \\)' : '-type f';
  const name = globNameFilter(pattern);
  const nameTest = name === undefined ? '' : ` -name ${shellQuote(name)}`;
  return [
    `R=${r}`,
    `if [ -d "$R" ]; then echo sbx:dir; find -H "$R" -mindepth 1 ${pruneExpression()} ${type}${nameTest} -print0 2>/dev/null | ${SWAP_NUL_AND_NEWLINE} | head -n ${remoteOutputLimit(maxResults)}`,
    'elif [ -e "$R" ]; then echo sbx:other',
    'else echo sbx:missing; fi',
  ].join('; ');
}

/**
 * Glob results from the output of `buildFindCommand(root, pattern, options)`: entries outside
 * `root` dropped, ignore list and full glob applied, `compareRelativePaths` order, `maxResults`
 * cut. `truncated` when more matched, or when the output cap was reached.
 */
export function parseFindOutput(
  stdout: string,
  root: string,
  pattern: string,
  options: RemoteGlobOptions & RemoteParseOptions = {},
): GlobResult {
  const matches = compileGlob(pattern);
  const maxResults = requireCount('maxResults', options.maxResults ?? DEFAULT_GLOB_MAX_RESULTS, 1);
  const base = normalizeRoot(root);
  const shown = options.displayPath ?? root;
  const { kind, body } = splitHeader(stdout);
  if (kind === 'missing') throw missingError(shown, 'glob');
  if (kind === 'other' || kind === 'file') {
    throw new SandboxFileError(`Not a directory: ${shown}`, {
      path: shown,
      operation: 'glob',
      kind: 'ENOTDIR',
    });
  }
  const rels = new Set<string>();
  for (const entry of entries(body)) {
    const rel = relativeTo(base, entry);
    if (rel === undefined || shouldIgnorePath(rel) || !matches(rel)) continue;
    rels.add(rel);
  }
  const sorted = [...rels].sort(compareRelativePaths);
  return {
    paths: sorted.slice(0, maxResults).map((rel) => joinRoot(base, rel)),
    truncated: sorted.length > maxResults || lineCount(body) >= remoteOutputLimit(maxResults),
  };
}

export function planRemoteGlob(
  root: string,
  pattern: string,
  options: RemoteGlobOptions & RemoteParseOptions = {},
): RemoteSearchPlan<GlobResult> {
  return {
    command: buildFindCommand(root, pattern, options),
    parse: (stdout) => parseFindOutput(stdout, root, pattern, options),
  };
}
