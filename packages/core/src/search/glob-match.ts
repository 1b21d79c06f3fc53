import { InvalidArgumentError } from '../errors/errors.js';

/** A compiled glob: tests a `/`-separated path relative to the search root. */
export type GlobMatcher = (relativePath: string) => boolean;

export interface GlobMatchOptions {
  /** Default true: `*.PY` does not match `x.py`, as on POSIX filesystems. */
  caseSensitive?: boolean;
}

/** Longest glob pattern accepted, in UTF-16 code units. */
export const MAX_GLOB_PATTERN_LENGTH = 1024;
/** Most alternatives a pattern's `{a,b}` braces may expand to. */
export const MAX_GLOB_ALTERNATIVES = 256;

type Token =
  | { kind: 'char'; ch: string }
  | { kind: 'any' }
  | { kind: 'star' }
  | { kind: 'class'; negated: boolean; items: readonly (readonly [string, string])[] };

/** One path segment of a pattern: `**` spans segments, anything else matches exactly one. */
type Segment = { kind: 'globstar' } | { kind: 'name'; tokens: readonly Token[] };

/**
 * Compiles a search glob once, for use on many paths.
 *
 * - A pattern without `/` matches the last segment (the name) at any depth: `*.py` matches
 *   `a/b/c.py`.
 * - A pattern with `/` matches the whole relative path, and `**` spans any number of directories
 *   (zero included): `src/**\/*.ts` matches `src/a.ts` and `src/x/y/b.ts`, `**\/*.py` matches
 *   `app.py`. Such a pattern is anchored at the search root: `src/*.py` does not match
 *   `a/src/x.py` (write `**\/src/*.py` for that).
 * - `*` and `?` never cross `/` and do match a leading dot (fnmatch rules); `[...]` and `[!...]`
 *   (or `[^...]`) are character classes, `{a,b}` expands to alternatives, `\` escapes the next
 *   character. Extglobs (`+(a|b)`, `!(x)`) are not special: their characters match literally, as
 *   in the reference's fnmatch. A leading `./` is dropped, trailing `/` ignored.
 *
 * Matching is linear by construction: a segment is matched by the greedy wildcard algorithm that
 * only ever backtracks to the last `*` (O(name × pattern) at worst, no regular expression), and
 * `**` segments the same way over the list of segments. A hostile pattern such as `*a*a*a*a*b`
 * costs microseconds, where a backtracking regex took minutes.
 *
 * Refused with `InvalidArgumentError`: an empty or absolute pattern (results are relative to the
 * search root, so such a pattern could never match and would only hide the mistake), a pattern
 * longer than 1,024 characters, braces expanding to more than 256 alternatives.
 */
export function compileGlob(pattern: string, options: GlobMatchOptions = {}): GlobMatcher {
  if (typeof pattern !== 'string' || pattern.trim() === '') {
    throw new InvalidArgumentError('glob pattern must not be empty');
  }
  if (pattern.length > MAX_GLOB_PATTERN_LENGTH) {
    throw new InvalidArgumentError(
      `glob pattern is too long: ${pattern.length} characters, at most ${MAX_GLOB_PATTERN_LENGTH}`,
    );
  }
  if (pattern.startsWith('/')) {
    throw new InvalidArgumentError(
      `glob pattern must be relative to the search path, got absolute pattern '${pattern}'`,
    );
  }
  let normalized = pattern;
  while (normalized.startsWith('./')) normalized = normalized.slice(2);
  normalized = normalized.replace(/\/+$/, '');
  if (normalized === '') {
    throw new InvalidArgumentError(`glob pattern '${pattern}' names no file`);
  }
  const fold = options.caseSensitive === false;
  const alternatives = expandBraces(normalized).map((alt) =>
    parseSegments(fold ? alt.toLowerCase() : alt),
  );
  const nameOnly = alternatives.every((segments) => segments.length === 1);
  return (relativePath) => {
    const subject = fold ? relativePath.toLowerCase() : relativePath;
    if (nameOnly) {
      const name = characters(subject.slice(subject.lastIndexOf('/') + 1));
      return alternatives.some((segments) => matchName(segments[0] as Segment, name));
    }
    const parts = subject.split('/').filter((p) => p !== '');
    const names = parts.map(characters);
    return alternatives.some((segments) => matchSegments(segments, names));
  };
}

const SURROGATE = /[\ud800-\udfff]/;

/**
 * A name as a sequence of characters (code points) to match: the string itself when it has no
 * surrogate pair (every code unit is then one character), which spares an array per name on the
 * hot path of a walk; `Array.from` otherwise.
 */
function characters(name: string): ArrayLike<string> {
  return SURROGATE.test(name) ? Array.from(name) : name;
}

/** One-off form of `compileGlob(pattern)(relativePath)`. */
export function pathMatchesGlob(
  pattern: string,
  relativePath: string,
  options: GlobMatchOptions = {},
): boolean {
  return compileGlob(pattern, options)(relativePath);
}

/**
 * The part of a glob that `find -name` can test on its own, or `undefined`. Remote search pushes
 * it into `find` so only plausible names cross the wire; it is a necessary condition (the full
 * pattern is still applied to what comes back), so it must only be returned when fnmatch and
 * this matcher agree on it: no braces, parentheses, negation, escapes or `**`.
 */
export function globNameFilter(pattern: string): string | undefined {
  const normalized = pattern.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
  const last = normalized.slice(normalized.lastIndexOf('/') + 1);
  if (last === '' || last.includes('**')) return undefined;
  if (/[{}()\\!+@]/.test(last)) return undefined;
  return last;
}

/**
 * `{a,b}` alternatives, nested braces included, expanded left to right. A `{` without a matching
 * `}` or without a top-level `,` is literal (as in bash). Escaped braces stay literal.
 */
function expandBraces(pattern: string): string[] {
  const open = findBraceGroup(pattern);
  if (!open) return [pattern];
  const { start, end, commas } = open;
  const head = pattern.slice(0, start);
  const tail = pattern.slice(end + 1);
  const bodies: string[] = [];
  let from = start + 1;
  for (const comma of [...commas, end]) {
    bodies.push(pattern.slice(from, comma));
    from = comma + 1;
  }
  const out: string[] = [];
  for (const body of bodies) {
    for (const expanded of expandBraces(head + body + tail)) {
      out.push(expanded);
      if (out.length > MAX_GLOB_ALTERNATIVES) {
        throw new InvalidArgumentError(
          `glob pattern expands to more than ${MAX_GLOB_ALTERNATIVES} alternatives`,
        );
      }
    }
  }
  return out;
}

function findBraceGroup(
  pattern: string,
): { start: number; end: number; commas: number[] } | undefined {
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      i++;
      continue;
    }
    if (ch !== '{') continue;
    let depth = 0;
    const commas: number[] = [];
    for (let j = i; j < pattern.length; j++) {
      const c = pattern[j];
      if (c === '\\') {
        j++;
      } else if (c === '{') {
        depth++;
      } else if (c === '}') {
        depth--;
        if (depth === 0) {
          if (commas.length > 0) return { start: i, end: j, commas };
          break;
        }
      } else if (c === ',' && depth === 1) {
        commas.push(j);
      }
    }
  }
  return undefined;
}

function parseSegments(pattern: string): Segment[] {
  const segments: Segment[] = [];
  for (const part of pattern.split('/')) {
    if (part === '') continue;
    if (part === '**') {
      // `**/**` means the same as `**`; collapsing keeps the segment matcher's work bounded.
      if (segments.at(-1)?.kind !== 'globstar') segments.push({ kind: 'globstar' });
      continue;
    }
    segments.push({ kind: 'name', tokens: parseName(part) });
  }
  return segments;
}

function parseName(part: string): Token[] {
  const chars = Array.from(part);
  const tokens: Token[] = [];
  // Once a `[` finds no closing `]`, no later `[` can (its scan would see a subset of the same
  // characters): they are literal without scanning again, which keeps `[[[[…` linear.
  let classesClose = true;
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] as string;
    if (ch === '\\' && i + 1 < chars.length) {
      tokens.push({ kind: 'char', ch: chars[++i] as string });
    } else if (ch === '*') {
      // Consecutive stars match what one star matches.
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (ch === '?') {
      tokens.push({ kind: 'any' });
    } else if (ch === '[') {
      const parsed = classesClose ? parseClass(chars, i) : undefined;
      if (parsed) {
        tokens.push(parsed.token);
        i = parsed.end;
      } else {
        classesClose = false;
        tokens.push({ kind: 'char', ch });
      }
    } else {
      tokens.push({ kind: 'char', ch });
    }
  }
  return tokens;
}

/** `[...]` starting at `start`, or undefined when it never closes (then `[` is literal). */
function parseClass(
  chars: readonly string[],
  start: number,
): { token: Token; end: number } | undefined {
  let i = start + 1;
  let negated = false;
  if (chars[i] === '!' || chars[i] === '^') {
    negated = true;
    i++;
  }
  const items: [string, string][] = [];
  let first = true;
  for (; i < chars.length; i++) {
    let ch = chars[i] as string;
    if (ch === ']' && !first) return { token: { kind: 'class', negated, items }, end: i };
    first = false;
    if (ch === '\\' && i + 1 < chars.length) ch = chars[++i] as string;
    if (chars[i + 1] === '-' && i + 2 < chars.length && chars[i + 2] !== ']') {
      let to = chars[i + 2] as string;
      i += 2;
      if (to === '\\' && i + 1 < chars.length) to = chars[++i] as string;
      items.push([ch, to]);
    } else {
      items.push([ch, ch]);
    }
  }
  return undefined;
}

function tokenMatches(token: Token, ch: string): boolean {
  switch (token.kind) {
    case 'char':
      return token.ch === ch;
    case 'any':
      return true;
    case 'class': {
      const inside = token.items.some(([from, to]) => ch >= from && ch <= to);
      return inside !== token.negated;
    }
    case 'star':
      return false;
  }
}

/**
 * One segment against one name (code points). The greedy wildcard algorithm: on a mismatch,
 * retry from the most recent `*` with one more character consumed by it. Earlier stars never need
 * revisiting, since a later star can absorb anything an earlier one could, which bounds the work
 * at O(name × tokens).
 */
function matchName(segment: Segment, name: ArrayLike<string>): boolean {
  if (segment.kind === 'globstar') return true;
  const tokens = segment.tokens;
  let t = 0;
  let n = 0;
  let starToken = -1;
  let starName = 0;
  while (n < name.length) {
    const token = tokens[t];
    if (token !== undefined && token.kind === 'star') {
      starToken = t++;
      starName = n;
    } else if (token !== undefined && tokenMatches(token, name[n] as string)) {
      t++;
      n++;
    } else if (starToken >= 0) {
      t = starToken + 1;
      n = ++starName;
    } else {
      return false;
    }
  }
  while (tokens[t]?.kind === 'star') t++;
  return t === tokens.length;
}

/** Segments against path parts, `**` playing the role of `*` one level up (same algorithm). */
function matchSegments(segments: readonly Segment[], parts: readonly ArrayLike<string>[]): boolean {
  let s = 0;
  let p = 0;
  let starSegment = -1;
  let starPart = 0;
  while (p < parts.length) {
    const segment = segments[s];
    if (segment !== undefined && segment.kind === 'globstar') {
      starSegment = s++;
      starPart = p;
    } else if (segment !== undefined && matchName(segment, parts[p] as ArrayLike<string>)) {
      s++;
      p++;
    } else if (starSegment >= 0) {
      s = starSegment + 1;
      p = ++starPart;
    } else {
      return false;
    }
  }
  while (segments[s]?.kind === 'globstar') s++;
  return s === segments.length;
}
