import { InvalidArgumentError } from '../errors/errors.js';
import { errorMessage } from '../errors/error-inspection.js';

export interface GrepPatternOptions {
  /** Search for the pattern text itself: every regex metacharacter is escaped. Default false. */
  literal?: boolean;
  /** Default false: searches ignore case unless asked otherwise. */
  caseSensitive?: boolean;
}

export interface TranslatedRegex {
  source: string;
  /** JS flags implied by leading Python inline flags (`(?i)` → `i`, `(?s)` → `s`, `(?m)` → `m`). */
  flags: string;
}

const INLINE_FLAGS = /^\(\?([aiLmsux]+)\)/;
/** `{,n}` at a given index (sticky: no copy of the rest of the pattern per `{`). */
const OPEN_UPPER_BOUND = /\{,(\d+)\}/y;
/** Letter escapes Python's `re` knows, plus JS's `\k<name>` (`\N{…}`, named characters, is not supported). */
const PYTHON_LETTER_ESCAPES = new Set([...'abBdDfnrsStvwWxuUAZz', 'k']);

function badEscape(pattern: string, escape: string, why: string): InvalidArgumentError {
  return new InvalidArgumentError(
    `Invalid regex pattern '${pattern}': bad escape ${escape} (${why})`,
  );
}
const WHITESPACE = /[ \t\n\r\f\v]/;

/** Python's `(?x)` verbose mode: drop unescaped whitespace and `#` comments outside classes. */
function stripVerbose(source: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const ch = source[i]!;
    if (ch === '\\') {
      out += source.slice(i, i + 2);
      i++;
    } else if (inClass) {
      if (ch === ']') inClass = false;
      out += ch;
    } else if (ch === '[') {
      inClass = true;
      out += ch;
      // A `]` (or `^]`) right after `[` is a member, not the end of the class.
      if (source[i + 1] === '^') out += source[++i];
      if (source[i + 1] === ']') out += source[++i];
    } else if (ch === '#') {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (!WHITESPACE.test(ch)) {
      out += ch;
    }
  }
  return out;
}

/**
 * Rewrites the Python `re` constructs agents commonly write into their JS equivalents. Patterns
 * reach sbx from models trained on Python code, and the contract's pattern language is Python's.
 *
 * Translated: leading global flags `(?i)` `(?s)` `(?m)` `(?x)` (`a`, `u`, `L` are accepted and
 * have no JS counterpart), `(?P<name>...)` → `(?<name>...)`, `(?P=name)` → `\k<name>`,
 * `(?#comment)` removed, `\A` → `^`, `\Z` / `\z` → `$` (matching is per line, so start/end of
 * string and of line coincide), `{,n}` → `{0,n}`, and a `]` right after `[` (or `[^`) is a literal
 * member as in Python. Everything else is passed to `RegExp` as written; differences that remain
 * are documented in the package README (e.g. `\w` and `\d` are ASCII-only in JS, scoped flags
 * `(?i:...)` need Node 23+, possessive quantifiers and atomic groups are rejected).
 */
export function translatePythonRegex(pattern: string): TranslatedRegex {
  let source = pattern;
  const flagSet = new Set<string>();
  let verbose = false;
  for (let m = INLINE_FLAGS.exec(source); m; m = INLINE_FLAGS.exec(source)) {
    for (const f of m[1]!) {
      if (f === 'i' || f === 's' || f === 'm') flagSet.add(f);
      else if (f === 'x') verbose = true;
    }
    source = source.slice(m[0].length);
  }
  if (verbose) source = stripVerbose(source);

  // The next `)` at or after each index, computed once: looking it up per `(?P=` or `(?#` would
  // rescan the rest of the pattern each time (quadratic on `(?#(?#(?#…` without a `)`).
  const closeAt = new Int32Array(source.length + 1).fill(-1);
  for (let j = source.length - 1; j >= 0; j--) closeAt[j] = source[j] === ')' ? j : closeAt[j + 1]!;
  const nextClose = (from: number): number => closeAt[from] ?? -1;
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const ch = source[i]!;
    if (ch === '\\') {
      const next = source[i + 1];
      i++;
      if (!inClass && next === 'A') out += '^';
      else if (!inClass && (next === 'Z' || next === 'z')) out += '$';
      else if (next === 'a') out += '\\x07';
      else if (next === 'U') {
        const hex = source.slice(i + 1, i + 9);
        const cp = /^[0-9a-fA-F]{8}$/.test(hex) ? Number.parseInt(hex, 16) : Number.NaN;
        if (!(cp <= 0x10ffff))
          throw badEscape(pattern, `\\U${hex}`, 'needs 8 hex digits of a code point');
        out += escapeRegex(String.fromCodePoint(cp));
        i += 8;
      } else if (next !== undefined && /[A-Za-z]/.test(next) && !PYTHON_LETTER_ESCAPES.has(next)) {
        // Python's `re` refuses unknown letter escapes; passing `\p{L}` through would make it a
        // literal `p{L}` in JS, silently matching something else than what was asked.
        throw badEscape(pattern, `\\${next}`, "Python's re has no such escape");
      } else out += `\\${next ?? ''}`;
      continue;
    }
    if (inClass) {
      if (ch === ']') inClass = false;
      out += ch;
      continue;
    }
    if (ch === '[') {
      inClass = true;
      out += ch;
      if (source[i + 1] === '^') out += source[++i];
      if (source[i + 1] === ']') {
        out += '\\]';
        i++;
      }
      continue;
    }
    if (ch === '(' && source.startsWith('(?P<', i)) {
      out += '(?<';
      i += 3;
      continue;
    }
    if (ch === '(' && source.startsWith('(?P=', i)) {
      const close = nextClose(i);
      if (close !== -1) {
        out += `\\k<${source.slice(i + 4, close)}>`;
        i = close;
        continue;
      }
    }
    if (ch === '(' && source.startsWith('(?#', i)) {
      const close = nextClose(i);
      if (close !== -1) {
        i = close;
        continue;
      }
    }
    if (ch === '{') {
      OPEN_UPPER_BOUND.lastIndex = i;
      const m = OPEN_UPPER_BOUND.exec(source);
      if (m) {
        out += `{0,${m[1]}}`;
        i += m[0].length - 1;
        continue;
      }
    }
    out += ch;
  }
  return { source: out, flags: [...flagSet].sort().join('') };
}

/** Escapes every character `RegExp` treats specially. */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

function reasonOf(err: unknown): string {
  const message = errorMessage(err);
  return message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '');
}

/**
 * The one compiled expression a search uses for every line of every file. Compiling first means
 * a bad pattern fails before any I/O, local or remote, as an `InvalidArgumentError` whose message
 * starts with `Invalid regex pattern`. Case-insensitive unless `caseSensitive`; a leading `(?i)`
 * turns case folding on regardless. Never carries the `g` or `y` flag, so `test` is stateless.
 */
export function compileGrepPattern(pattern: string, options: GrepPatternOptions = {}): RegExp {
  if (typeof pattern !== 'string') {
    throw new InvalidArgumentError(
      `Invalid regex pattern: expected a string, got ${typeof pattern}`,
    );
  }
  const translated = options.literal
    ? { source: escapeRegex(pattern), flags: '' }
    : translatePythonRegex(pattern);
  const flags = new Set(translated.flags);
  if (!options.caseSensitive) flags.add('i');
  try {
    return new RegExp(translated.source, [...flags].sort().join(''));
  } catch (err) {
    throw new InvalidArgumentError(`Invalid regex pattern '${pattern}': ${reasonOf(err)}`, {
      cause: err,
    });
  }
}
