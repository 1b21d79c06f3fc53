import { InvalidArgumentError, SandboxFileNotFoundError } from '../errors/errors.js';
import { IGNORE_PATTERNS } from './search-ignore.js';
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
 *
 * This file holds what the three searches share: the header, the root and entry handling, the
 * ignore-list prune and the output budgets. Each search's command and parser live in their own
 * file: `search-remote-glob.ts`, `search-remote-grep.ts`, `search-remote-list-dir.ts`.
 */

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

export function normalizeRoot(root: string): string {
  if (typeof root !== 'string' || !root.startsWith('/')) {
    throw new InvalidArgumentError(`remote search root must be an absolute path, got '${root}'`);
  }
  const trimmed = root.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

/** `rel` of `entry` below `root`, or undefined when it is not strictly inside. */
export function relativeTo(root: string, entry: string): string | undefined {
  const prefix = root === '/' ? '/' : `${root}/`;
  if (!entry.startsWith(prefix) || entry.length === prefix.length) return undefined;
  const rel = entry.slice(prefix.length);
  // `find` never prints these, so such an entry did not come from the command: refuse it.
  if (rel.split('/').some((s) => s === '' || s === '.' || s === '..')) return undefined;
  return rel;
}

export function joinRoot(root: string, rel: string): string {
  return root === '/' ? `/${rel}` : `${root}/${rel}`;
}

export function pruneExpression(): string {
  const names = IGNORE_PATTERNS.map((p) => `-name ${shellQuote(p)}`).join(' -o ');
  return `\\( ${names} \\) -prune -o`;
}

export const SWAP_NUL_AND_NEWLINE = "tr '\\012\\000' '\\000\\012'";

export interface Header {
  kind: 'dir' | 'file' | 'other' | 'missing' | undefined;
  nul: boolean;
  body: string;
}

export function splitHeader(stdout: string): Header {
  const m = /^sbx:(dir|file|other|missing)(:nul)?\n/.exec(stdout);
  if (!m) return { kind: undefined, nul: false, body: stdout };
  return { kind: m[1] as Header['kind'], nul: m[2] !== undefined, body: stdout.slice(m[0].length) };
}

export function missingError(shown: string, operation: string): SandboxFileNotFoundError {
  return new SandboxFileNotFoundError(`No such file or directory: ${shown}`, {
    path: shown,
    operation,
    kind: 'ENOENT',
  });
}

export function lineCount(body: string): number {
  let count = 0;
  for (let i = body.indexOf('\n'); i !== -1; i = body.indexOf('\n', i + 1)) count++;
  return count;
}

export function entries(body: string): string[] {
  const lines = body.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.map((l) => l.replaceAll('\0', '\n'));
}
