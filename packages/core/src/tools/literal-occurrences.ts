import { InvalidArgumentError } from '../errors/errors.js';

/** Bytes of text scanned between two turns of the event loop. */
const SLICE_BYTES = 1024 * 1024;
/** Length of the needle's prefix the native search looks for; short, so its worst case is too. */
const PREFIX_BYTES = 8;
/**
 * What one native call is charged, in bytes of the budget: with dense candidates (a one-byte
 * needle in a text made of it) the per-call cost dominates, and the byte scan is cheaper.
 */
const CALL_COST_BYTES = 256;

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Knuth-Morris-Pratt failure function: the longest proper border of each prefix of `needle`. */
function borders(needle: Uint8Array): Int32Array {
  const table = new Int32Array(needle.length);
  let k = 0;
  for (let i = 1; i < needle.length; i++) {
    const c = needle[i];
    while (k > 0 && c !== needle[k]) k = table[k - 1] as number;
    if (c === needle[k]) k++;
    table[i] = k;
  }
  return table;
}

/**
 * Calls `onMatch` with the start of every occurrence of `needle` in `text`, left to right and
 * without overlaps (where `indexOf` would find them, each search starting after the previous
 * match), and returns their number.
 *
 * Linear in the text whatever the needle. The engine's own `indexOf` (V8's and Node's) is a
 * Boyer-Moore search that turns quadratic when a long suffix of the needle keeps matching: an
 * `old_str` of `/x` and 40,000 `/a` in 16 MB of `/a/a/...` held the event loop for over eight
 * minutes. Here the native search only looks for a short prefix; each candidate is confirmed with
 * a native compare; once the native calls and failed confirmations have cost as many bytes as the
 * text, a Knuth-Morris-Pratt scan (every byte read once) does the rest. A turn of the event loop passes
 * every `SLICE_BYTES`, so a long text is never scanned in one go.
 */
export async function forEachOccurrence(
  text: Buffer,
  needle: Buffer,
  onMatch: (start: number) => void,
): Promise<number> {
  const n = text.length;
  const m = needle.length;
  if (m === 0) throw new InvalidArgumentError('The text to search for must not be empty');
  if (m > n) return 0;
  const prefix = needle.subarray(0, Math.min(m, PREFIX_BYTES));
  let count = 0;
  let pos = 0;
  let budget = n;
  let nextYield = SLICE_BYTES;
  // Candidates starting before `nextYield` only: the window ends there plus a prefix.
  let window = text.subarray(0, Math.min(n, nextYield + prefix.length - 1));
  while (pos <= n - m) {
    if (budget < 0) return count + (await scanFrom(text, needle, pos, nextYield, onMatch));
    if (pos >= nextYield) {
      await nextTurn();
      nextYield = pos + SLICE_BYTES;
      window = text.subarray(0, Math.min(n, nextYield + prefix.length - 1));
    }
    const at = window.indexOf(prefix, pos);
    budget -= CALL_COST_BYTES;
    if (at < 0) {
      pos = nextYield;
      continue;
    }
    if (at > n - m) break;
    if (m <= prefix.length || text.compare(needle, 0, m, at, at + m) === 0) {
      count++;
      onMatch(at);
      pos = at + m;
      continue;
    }
    pos = at + 1;
    budget -= m;
  }
  return count;
}

/** The Knuth-Morris-Pratt scan of `text` from `from`: every byte read once. */
async function scanFrom(
  text: Buffer,
  needle: Buffer,
  from: number,
  firstYield: number,
  onMatch: (start: number) => void,
): Promise<number> {
  const table = borders(needle);
  const n = text.length;
  const m = needle.length;
  let count = 0;
  let k = 0;
  let nextYield = firstYield;
  for (let i = from; i < n; i++) {
    if (i >= nextYield) {
      await nextTurn();
      nextYield = i + SLICE_BYTES;
    }
    const c = text[i];
    while (k > 0 && c !== needle[k]) k = table[k - 1] as number;
    if (c === needle[k]) {
      k++;
      if (k === m) {
        count++;
        onMatch(i - m + 1);
        // No overlaps: the next occurrence starts after this one.
        k = 0;
      }
    }
  }
  return count;
}

/**
 * The number of non-overlapping occurrences of a non-empty `needle` in `text`, as counted by
 * repeated `indexOf`, in linear time (see `forEachOccurrence`). Both must be well-formed Unicode.
 */
export function countLiteralOccurrences(text: string, needle: string): Promise<number> {
  return forEachOccurrence(Buffer.from(text, 'utf8'), Buffer.from(needle, 'utf8'), () => {});
}
