import { posix } from 'node:path';
import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxFileNotFoundError,
} from '../errors/errors.js';
import { compileGlob, globNameFilter } from './glob-match.js';
import { regexToPosixEre } from './grep-ere.js';
import { truncateLine } from './grep-line-summary.js';
import { compileGrepPattern } from './grep-pattern.js';
import type { GlobResult, GrepResult } from '../contract/sandbox.js';
import { IGNORE_PATTERNS, shouldIgnorePath } from './search-ignore.js';
import {
  DEFAULT_GLOB_MAX_RESULTS,
  DEFAULT_GREP_MAX_RESULTS,
  DEFAULT_LIST_DIR_DEPTH,
  DEFAULT_MAX_FILE_SIZE_BYTES,
  MAX_GREP_LINE_LENGTH,
  REMOTE_LIST_DIR_LIMIT,
} from './search-limits.js';
import { compareRelativePaths } from './search-order.js';
import { requireCount } from './search-walk.js';
import { matchingLineIndices } from './search-worker-pool.js';
import { shellQuote } from '../command/shell-quote.js';

/*
 * Remote search protocol. Sandboxes without a file-search API (E2B, Tenki, OpenSandbox, ...) run
 * one POSIX shell command built here and hand its stdout back to the matching parser, so every
 * provider filters, orders and truncates exactly like the local walkers. The commands need only
 * `sh`, `find` (`-H -mindepth -maxdepth -prune -print0 -size -exec ... +`), `grep`, `tr` and
 * `head` — GNU and busybox both qualify.
 *
 * Output format: the first line is a status header `sbx:<kind>[:nul]`, where kind is `dir`,
 * `file`, `other` (exists, but neither) or `missing`. For `find`, NUL-terminated paths are piped
 * through `tr` swapping NUL and newline, so every entry is one line and a newline inside a name
 * travels as NUL (no name can contain NUL). `grep` records are `path\0line:text` when the remote
 * grep supports `-Z` (GNU; announced by `:nul` in the header), else busybox's `path:line:text`.
 * Output is capped with `head -n`; when the cap is reached the parser reports `truncated`, since
 * it cannot know what was cut.
 */

export interface RemoteGlobOptions {
  includeDirs?: boolean;
  /** Default 200. */
  maxResults?: number;
}

export interface RemoteGrepOptions {
  glob?: string | null;
  literal?: boolean;
  caseSensitive?: boolean;
  /** Default 100. */
  maxResults?: number;
  /** Files strictly larger are skipped. Default 1,000,000 bytes. */
  maxFileSize?: number;
}

export interface RemoteListDirOptions {
  /** Default 2. */
  maxDepth?: number;
}

export interface RemoteParseOptions {
  /** The path to name in errors instead of the remote one (e.g. the caller's virtual path). */
  displayPath?: string;
  /** Deadline of the line re-check on a search worker (grep only). Default 10 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A command to run remotely and the parser for its stdout, built from one set of options. */
export interface RemoteSearchPlan<T> {
  command: string;
  parse(stdout: string): T;
}

/**
 * Raw lines a remote search may print. Results are filtered after they arrive (ignore list, glob,
 * the exact JS regex), so the command must over-fetch; this is the reference's budget.
 */
export function remoteOutputLimit(maxResults: number): number {
  return Math.max(4 * maxResults, maxResults + 50);
}

/** `grep -m`: lines one file may contribute before the parser must assume more were cut. */
export function remotePerFileLimit(maxResults: number): number {
  return Math.max(maxResults + 1, 50);
}

function normalizeRoot(root: string): string {
  if (typeof root !== 'string' || !root.startsWith('/')) {
    throw new InvalidArgumentError(`remote search root must be an absolute path, got '${root}'`);
  }
  const trimmed = root.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

/** `rel` of `entry` below `root`, or undefined when it is not strictly inside. */
function relativeTo(root: string, entry: string): string | undefined {
  const prefix = root === '/' ? '/' : `${root}/`;
  if (!entry.startsWith(prefix) || entry.length === prefix.length) return undefined;
  const rel = entry.slice(prefix.length);
  // `find` never prints these, so such an entry did not come from the command: refuse it.
  if (rel.split('/').some((s) => s === '' || s === '.' || s === '..')) return undefined;
  return rel;
}

function joinRoot(root: string, rel: string): string {
  return root === '/' ? `/${rel}` : `${root}/${rel}`;
}

function pruneExpression(): string {
  const names = IGNORE_PATTERNS.map((p) => `-name ${shellQuote(p)}`).join(' -o ');
  return `\\( ${names} \\) -prune -o`;
}

const SWAP_NUL_AND_NEWLINE = "tr '\\012\\000' '\\000\\012'";

interface Header {
  kind: 'dir' | 'file' | 'other' | 'missing' | undefined;
  nul: boolean;
  body: string;
}

function splitHeader(stdout: string): Header {
  const m = /^sbx:(dir|file|other|missing)(:nul)?\n/.exec(stdout);
  if (!m) return { kind: undefined, nul: false, body: stdout };
  return { kind: m[1] as Header['kind'], nul: m[2] !== undefined, body: stdout.slice(m[0].length) };
}

function missingError(shown: string, operation: string): SandboxFileNotFoundError {
  return new SandboxFileNotFoundError(`No such file or directory: ${shown}`, {
    path: shown,
    operation,
    kind: 'ENOENT',
  });
}

function lineCount(body: string): number {
  let count = 0;
  for (let i = body.indexOf('\n'); i !== -1; i = body.indexOf('\n', i + 1)) count++;
  return count;
}

function entries(body: string): string[] {
  const lines = body.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.map((l) => l.replaceAll('\0', '\n'));
}

// ---------------------------------------------------------------------------------------------
// glob

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

// ---------------------------------------------------------------------------------------------
// grep

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

// ---------------------------------------------------------------------------------------------
// listDir

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

/** Sorted listing (directories with a trailing `/`) from `buildListDirCommand` output; `[]` for a missing or non-directory root. */
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
