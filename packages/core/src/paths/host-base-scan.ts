import { isTextBoundaryAt, tailEndBefore } from './path-mapping-boundaries.js';

/** One host path found in text: `[start, baseEnd)` is the base, `[baseEnd, end)` its tail. */
export interface HostBaseOccurrence {
  readonly start: number;
  readonly baseEnd: number;
  readonly end: number;
  /** Index of the base in the list given to `scanHostBases`. */
  readonly base: number;
}

export interface HostBaseScanOptions {
  /** Each separator of a base matches `/` or `\`. Default false. */
  separatorAgnostic?: boolean;
}

/**
 * Every occurrence of the `bases` in `text` under the masking rule, left to right in one pass:
 *
 * - a base counts where the text goes on with `/`, ends, or has a character that cannot continue
 *   a name (so `…/skills` does not match inside `…/skills-extra`);
 * - where several bases start at one place, the longest wins (the deepest directory), whatever
 *   their order;
 * - a base followed by `/` or `\` takes a tail up to whitespace, a quote or shell punctuation, or
 *   up to where the next occurrence of any base starts: so in `A/x:B/y:C/z` (a `PATH`) every
 *   root is found, however many are chained, and none hides in another's tail.
 *
 * Linear in the text for a given set of bases: each base's search only moves forward (its next
 * occurrence is remembered until passed), and each character of a tail is read once. Nothing is
 * rescanned, so a megabyte of `W/W/W/...` costs what a megabyte of anything does.
 */
export function* scanHostBases(
  text: string,
  bases: readonly string[],
  options: HostBaseScanOptions = {},
): Generator<HostBaseOccurrence> {
  const agnostic = options.separatorAgnostic === true;
  // Folding `\` to `/` keeps every offset, so occurrences index the original text.
  const haystack = agnostic && text.includes('\\') ? text.replace(/\\/g, '/') : text;
  const needles = bases.map((b) => (agnostic ? b.replace(/\\/g, '/') : b));
  // Per base: its first occurrence at or after the position it was last asked for, or -1 for
  // none left; -2 before the first search.
  const found = needles.map(() => -2);
  const nextAtOrAfter = (i: number, pos: number): number => {
    const cached = found[i] as number;
    if (cached === -1 || cached >= pos) return cached;
    const needle = needles[i] as string;
    if (needle.length === 0) return (found[i] = -1);
    let at = haystack.indexOf(needle, pos);
    while (at >= 0 && !isTextBoundaryAt(text, at + needle.length)) {
      at = haystack.indexOf(needle, at + 1);
    }
    return (found[i] = at);
  };
  const firstAtOrAfter = (pos: number): { at: number; base: number } => {
    let best = { at: -1, base: -1 };
    for (let i = 0; i < needles.length; i++) {
      const at = nextAtOrAfter(i, pos);
      if (at < 0) continue;
      if (
        best.at < 0 ||
        at < best.at ||
        (at === best.at && (needles[i] as string).length > (needles[best.base] as string).length)
      ) {
        best = { at, base: i };
      }
    }
    return best;
  };

  let pos = 0;
  for (;;) {
    const { at: start, base } = firstAtOrAfter(pos);
    if (start < 0) return;
    const baseEnd = start + (needles[base] as string).length;
    let end = baseEnd;
    const sep = text.charCodeAt(baseEnd);
    if (sep === 0x2f || sep === 0x5c) {
      const next = firstAtOrAfter(baseEnd).at;
      const limit = next < 0 ? text.length : next;
      if (limit > baseEnd) end = tailEndBefore(text, baseEnd + 1, limit);
    }
    yield { start, baseEnd, end, base };
    pos = end;
  }
}
