/** Escapes that stand for their own character in a JS regex source. */
const SELF_ESCAPES = new Set([...'.*+?^${}()|[]\\/-']);
const MIN_LITERAL_LENGTH = 2;

/**
 * The longest run of plain characters that every match of the JS regex `source` must contain, or
 * `undefined` when there is none worth using (shorter than 2, or the pattern has a top-level `|`).
 * Conservative by construction: groups, classes, class escapes, anchors and any character followed
 * by an optional quantifier end a run, so the literal is a necessary condition of a match. A
 * search tests it once per file (linear: a literal cannot backtrack) and skips files without it
 * before splitting lines or running the full expression.
 */
export function requiredLiteral(source: string): string | undefined {
  let best = '';
  let run: string[] = [];
  let depth = 0;
  let inClass = false;
  const endRun = () => {
    const text = run.join('');
    if (text.length > best.length) best = text;
    run = [];
  };
  // A literal character was just pushed: an optional quantifier (`*`, `?`, `{…}`) removes it; `+`
  // keeps it required but repeatable, so the run ends after it and the next one starts with it.
  const quantified = (i: number): number => {
    const next = source[i + 1];
    if (next === '+') {
      const ch = run.at(-1) as string;
      endRun();
      run.push(ch);
      return skipLazy(source, i + 1);
    }
    if (next === '*' || next === '?' || next === '{') {
      run.pop();
      endRun();
      return skipQuantifier(source, i);
    }
    return i;
  };
  for (let i = 0; i < source.length; i++) {
    const ch = source[i] as string;
    if (ch === '\\') {
      const next = source[i + 1] ?? '';
      i++;
      if (depth > 0 || inClass) continue;
      if (SELF_ESCAPES.has(next)) {
        run.push(next);
        i = quantified(i);
      } else {
        endRun();
        i = skipQuantifier(source, i);
      }
      continue;
    }
    if (inClass) {
      if (ch === ']') {
        inClass = false;
        if (depth === 0) i = skipQuantifier(source, i);
      }
      continue;
    }
    if (ch === '[') {
      inClass = true;
      if (source[i + 1] === '^') i++;
      if (source[i + 1] === ']') i++;
      if (depth === 0) endRun();
      continue;
    }
    if (ch === '(') {
      if (depth === 0) endRun();
      depth++;
      continue;
    }
    if (ch === ')') {
      depth--;
      if (depth === 0) i = skipQuantifier(source, i);
      continue;
    }
    if (depth > 0) continue;
    if (ch === '|') return undefined;
    if ('.^$*+?{}'.includes(ch)) {
      endRun();
      i = skipQuantifier(source, i);
      continue;
    }
    run.push(ch);
    i = quantified(i);
  }
  endRun();
  return best.length >= MIN_LITERAL_LENGTH ? best : undefined;
}

/** A `{n}`, `{n,}` or `{n,m}` quantifier at an index (sticky: bounded by its own length). */
const BRACE_QUANTIFIER = /\{\d*(?:,\d*)?\}/y;

function skipQuantifier(source: string, i: number): number {
  const next = source[i + 1];
  if (next === '*' || next === '+' || next === '?') return skipLazy(source, i + 1);
  if (next === '{') {
    BRACE_QUANTIFIER.lastIndex = i + 1;
    // Not a quantifier (`a{b`): a literal `{`, which the caller's next step ends the run at.
    if (!BRACE_QUANTIFIER.test(source)) return i;
    return skipLazy(source, BRACE_QUANTIFIER.lastIndex - 1);
  }
  return i;
}

function skipLazy(source: string, i: number): number {
  return source[i + 1] === '?' ? i + 1 : i;
}

/** The prefilter expression for a search: the required literal with the pattern's case flags. */
export function literalPrefilter(
  source: string,
  flags: string,
): { source: string; flags: string } | undefined {
  const literal = requiredLiteral(source);
  if (literal === undefined) return undefined;
  return {
    // Syntax characters only: valid with and without the `u` flag.
    source: literal.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'),
    flags: [...flags].filter((f) => f === 'i' || f === 'u').join(''),
  };
}
