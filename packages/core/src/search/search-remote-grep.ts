import { posix } from 'node:path';
import { SandboxFileError } from '../errors/errors.js';
import type { GrepResult } from '../contract/sandbox.js';
import { shellQuote } from '../command/shell-quote.js';
import { compileGlob, globNameFilter } from './glob-match.js';
import { regexToPosixEre } from './grep-ere.js';
import { truncateLine } from './grep-line-summary.js';
import { compileGrepPattern } from './grep-pattern.js';
import { shouldIgnorePath } from './search-ignore.js';
import {
  DEFAULT_GREP_MAX_RESULTS,
  DEFAULT_MAX_FILE_SIZE_BYTES,
  MAX_GREP_LINE_LENGTH,
} from './search-limits.js';
import { compareRelativePaths } from './search-order.js';
import { requireCount } from './search-walk.js';
import { matchingLineIndices } from './search-worker-pool.js';
import {
  lineCount,
  missingError,
  normalizeRoot,
  pruneExpression,
  relativeTo,
  remoteOutputLimit,
  remotePerFileLimit,
  splitHeader,
} from './search-remote.js';
import type { RemoteParseOptions, RemoteSearchPlan } from './search-remote.js';

// Remote grep: `grep` over the root (GNU `-Z` records or busybox's), every line re-checked with
// the JS expression on a search worker, so remote and local searches agree on what matches (see
// the protocol in `search-remote.ts`).

export interface RemoteGrepOptions {
  glob?: string | null;
  literal?: boolean;
  caseSensitive?: boolean;
  /** Default 100. */
  maxResults?: number;
  /** Files strictly larger are skipped. Default 1,000,000 bytes. */
  maxFileSize?: number;
}

/**
 * The shell command for a remote grep. A literal pattern goes to `grep -F` as written; a regex is
 * widened to a POSIX ERE prefilter (`regexToPosixEre`) and the parser re-checks every line with
 * the JS expression, so remote and local searches agree on what matches.
 */
export function buildGrepCommand(
  root: string,
  pattern: string,
  options: RemoteGrepOptions = {},
): string {
  const regex = compileGrepPattern(pattern, options);
  if (options.glob != null) compileGlob(options.glob);
  const maxResults = requireCount('maxResults', options.maxResults ?? DEFAULT_GREP_MAX_RESULTS, 1);
  const maxFileSize = requireCount(
    'maxFileSize',
    options.maxFileSize ?? DEFAULT_MAX_FILE_SIZE_BYTES,
    0,
  );
  const r = shellQuote(normalizeRoot(root));
  const flags = [`-m ${remotePerFileLimit(maxResults)}`];
  if (regex.flags.includes('i')) flags.push('-i');
  let expression: string;
  if (options.literal) {
    flags.push('-F');
    expression = pattern;
  } else {
    flags.push('-E');
    expression = regexToPosixEre(regex.source);
  }
  const name = options.glob == null ? undefined : globNameFilter(options.glob);
  const tests = `-type f${name === undefined ? '' : ` -name ${shellQuote(name)}`} -size -${maxFileSize + 1}c`;
  const grepArgs = `${flags.join(' ')} -e ${shellQuote(expression)}`;
  // GNU grep: -I skips binary files, -Z ends each file name with NUL: every record is exact.
  const gnu = `${tests} -exec grep -I -Z -n -H ${grepArgs} -- {} +`;
  // Busybox grep has neither. Names without ':' or newline are unambiguous in `path:line:text`
  // and go to one batched grep. The rare others are searched one by one, each output line
  // re-framed as `\0path\0line:text`; the script fails on purpose so `find` skips the batch.
  const framed = `for f do grep -n ${grepArgs} -- "$f" | while IFS= read -r l; do printf '\\000%s\\000%s\\n' "$f" "$l"; done; done; exit 1`;
  const busybox = `${tests} \\( ! -path '*:*' ! -path ${shellQuote('*\n*')} -o -exec sh -c ${shellQuote(framed)} sh {} \\; \\) -exec grep -n -H ${grepArgs} -- {} +`;
  const dir = `find -H "$R" -mindepth 1 ${pruneExpression()}`;
  const file = 'find -H "$R" -maxdepth 0';
  return [
    `R=${r}`,
    "Z=; if printf 'a\\n' | grep -qIZ a 2>/dev/null; then Z=1; fi",
    'if [ -d "$R" ]; then M=dir; elif [ -f "$R" ]; then M=file; elif [ -e "$R" ]; then M=other; else M=missing; fi',
    'echo "sbx:$M${Z:+:nul}"',
    `case "$M$Z" in dir1) ${dir} ${gnu} ;; file1) ${file} ${gnu} ;; dir) ${dir} ${busybox} ;; file) ${file} ${busybox} ;; esac 2>/dev/null | head -n ${remoteOutputLimit(maxResults)}`,
  ].join('; ');
}

interface RawRecord {
  path: string;
  lineNumber: number;
  text: string;
}

/**
 * Reads one `path\0line:text\n` record whose path starts at `start` (the path may hold newlines,
 * never NUL). `next` is where the following record starts, or -1 when the body ends inside this
 * one (a record `head` cut short).
 */
function readNulRecord(body: string, start: number): { record?: RawRecord; next: number } {
  const nul = body.indexOf('\0', start);
  if (nul === -1) return { next: -1 };
  const end = body.indexOf('\n', nul);
  if (end === -1) return { next: -1 };
  const rest = body.slice(nul + 1, end);
  const m = /^(\d+):/.exec(rest);
  if (!m) return { next: end + 1 };
  return {
    record: {
      path: body.slice(start, nul),
      lineNumber: Number(m[1]),
      text: rest.slice(m[0].length),
    },
    next: end + 1,
  };
}

/** GNU `-Z` output: every record is `path\0line:text`. */
function* nulRecords(body: string): Generator<RawRecord> {
  for (let pos = 0; pos >= 0 && pos < body.length;) {
    const { record, next } = readNulRecord(body, pos);
    if (record) yield record;
    pos = next;
  }
}

/**
 * Busybox output: `path:line:text` lines, plus `\0path\0line:text` records for names holding
 * ':' or a newline. Also reads plain `grep -rnH` output (no header), where a name containing
 * `:<digits>:` is split at the wrong place — which is why the built command never relies on that.
 */
function* colonRecords(body: string, root: string): Generator<RawRecord> {
  for (let pos = 0; pos >= 0 && pos < body.length;) {
    if (body[pos] === '\0') {
      const { record, next } = readNulRecord(body, pos + 1);
      if (record) yield record;
      pos = next;
      continue;
    }
    const end = body.indexOf('\n', pos);
    if (end === -1) return;
    const line = body.slice(pos, end);
    pos = end + 1;
    if (!line.startsWith(root)) continue;
    const sep = /:(\d+):/g;
    sep.lastIndex = root.length;
    const m = sep.exec(line);
    if (!m) continue;
    yield {
      path: line.slice(0, m.index),
      lineNumber: Number(m[1]),
      text: line.slice(m.index + m[0].length),
    };
  }
}

/**
 * Grep results from the output of `buildGrepCommand(root, pattern, options)`. Every line is
 * re-checked with the compiled JS expression; records outside `root` (or, for a single-file root,
 * for any other path) are dropped, as are ignored paths, paths failing the glob, lines over 2,000
 * characters and, on busybox, lines holding NUL (binary files). `truncated` when more lines
 * matched than `maxResults`, or when the output or a file's `-m` budget was exhausted.
 */
export async function parseGrepOutput(
  stdout: string,
  root: string,
  pattern: string,
  options: RemoteGrepOptions & RemoteParseOptions = {},
): Promise<GrepResult> {
  const regex = compileGrepPattern(pattern, options);
  const glob = options.glob == null ? undefined : compileGlob(options.glob);
  const maxResults = requireCount('maxResults', options.maxResults ?? DEFAULT_GREP_MAX_RESULTS, 1);
  const base = normalizeRoot(root);
  const shown = options.displayPath ?? root;
  const { kind, nul, body } = splitHeader(stdout);
  if (kind === 'missing') throw missingError(shown, 'grep');
  if (kind === 'other') {
    throw new SandboxFileError(`Not a regular file or directory: ${shown}`, {
      path: shown,
      operation: 'grep',
      kind: 'ENOTDIR',
    });
  }
  const perFile = new Map<string, number>();
  const candidates: { rel: string; path: string; lineNumber: number; text: string }[] = [];
  for (const record of nul ? nulRecords(body) : colonRecords(body, base)) {
    perFile.set(record.path, (perFile.get(record.path) ?? 0) + 1);
    let rel: string | undefined;
    if (record.path === base && kind !== 'dir') rel = posix.basename(base);
    else if (kind !== 'file') {
      rel = relativeTo(base, record.path);
      if (rel !== undefined && shouldIgnorePath(rel)) continue;
    }
    if (rel === undefined || (glob && !glob(rel))) continue;
    const text = record.text.endsWith('\r') ? record.text.slice(0, -1) : record.text;
    if (!nul && text.includes('\0')) continue;
    candidates.push({ rel, path: record.path, lineNumber: record.lineNumber, text });
  }
  // The re-check runs the pattern: on a search worker, under the deadline, never on this loop.
  const hits = await matchingLineIndices(
    candidates.map((c) => c.text),
    regex,
    MAX_GREP_LINE_LENGTH,
    options,
  );
  const found = hits.map((i) => {
    const c = candidates[i]!;
    return {
      rel: c.rel,
      match: { path: c.path, lineNumber: c.lineNumber, line: truncateLine(c.text) },
    };
  });
  found.sort(
    (a, b) => compareRelativePaths(a.rel, b.rel) || a.match.lineNumber - b.match.lineNumber,
  );
  const perFileLimit = remotePerFileLimit(maxResults);
  const cut =
    lineCount(body) >= remoteOutputLimit(maxResults) ||
    [...perFile.values()].some((count) => count >= perFileLimit);
  return {
    matches: found.slice(0, maxResults).map((f) => f.match),
    truncated: found.length > maxResults || cut,
  };
}

export function planRemoteGrep(
  root: string,
  pattern: string,
  options: RemoteGrepOptions & RemoteParseOptions = {},
): RemoteSearchPlan<Promise<GrepResult>> {
  return {
    command: buildGrepCommand(root, pattern, options),
    parse: (stdout) => parseGrepOutput(stdout, root, pattern, options),
  };
}
