import { middleMarker, truncateMiddle } from './truncation.js';

/**
 * Text up to this size is rewritten whole (a few ms); above it only the two windows the cut keeps
 * are, so a command that prints 20 MiB costs the loop what 2 × the cap costs, not 20 MiB of masking.
 */
export const WHOLE_REWRITE_CHARS = 256 * 1024;

/** The longest host path a rewrite masks (PATH_MAX): its reach past a window's edge. */
const PATH_REACH = 4096;

/**
 * How far a window's edge can change a rewrite: the longest host path plus the longest secret it
 * redacts. Redaction runs on masked text, so a secret may match only once a host path is masked;
 * an edge inside that path leaves the path unmasked and the secret's start before it unredacted.
 * Everything further from the edge is rewritten exactly as in the whole text.
 */
export function rewriteReach(secrets: Iterable<string> = []): number {
  let longest = 0;
  for (const secret of secrets) longest = Math.max(longest, secret.length);
  return PATH_REACH + longest + 1;
}

/**
 * `truncateMiddle(rewrite(text), maxChars)` — masking and redaction before the cut, so the cut
 * never lands inside a host path or a secret — without rewriting the part the cut drops. The head
 * and tail windows are widened until their rewritten text is longer than what is kept by at least
 * `reach`: a replacement that a window's edge cuts (left unmasked, or half redacted) then lies
 * wholly in the dropped middle. The marker's count is the dropped part's length before rewriting,
 * as the rewritten middle is never built.
 */
export function rewriteThenTruncateMiddle(
  text: string,
  rewrite: (text: string) => string,
  maxChars: number,
  reach: number,
): string {
  if (maxChars <= 0 || text.length <= Math.max(WHOLE_REWRITE_CHARS, maxChars + 4 * reach)) {
    return truncateMiddle(rewrite(text), maxChars);
  }
  // The marker sized for any count, as truncateMiddle sizes it for the total: never over maxChars.
  const kept = Math.max(0, maxChars - middleMarker(Number.MAX_SAFE_INTEGER).length);
  // A cap too short for any marker keeps only the head, as truncateMiddle does.
  if (kept === 0) return rewrittenHead(text, rewrite, maxChars, reach).head.slice(0, maxChars);
  const headChars = Math.floor(kept / 2);
  const tailChars = kept - headChars;
  const { headEnd, head } = rewrittenHead(text, rewrite, headChars, reach);
  let width = tailChars + 2 * reach;
  let tailStart: number;
  let tail: string;
  for (;;) {
    tailStart = Math.max(0, text.length - width);
    tail = rewrite(text.slice(tailStart));
    if (tail.length >= tailChars + reach || tailStart <= 0) break;
    width *= 2;
  }
  // The windows met (output that masking shrank a lot): the whole text was small enough after all.
  if (headEnd >= tailStart) return truncateMiddle(rewrite(text), maxChars);
  const skipped = head.length - headChars + (tailStart - headEnd) + (tail.length - tailChars);
  return head.slice(0, headChars) + middleMarker(skipped) + tail.slice(tail.length - tailChars);
}

/** The head window widened until its rewritten text is longer than `headChars` by `reach`. */
function rewrittenHead(
  text: string,
  rewrite: (text: string) => string,
  headChars: number,
  reach: number,
): { headEnd: number; head: string } {
  let width = headChars + 2 * reach;
  for (;;) {
    const headEnd = Math.min(width, text.length);
    const head = rewrite(text.slice(0, headEnd));
    if (head.length >= headChars + reach || headEnd >= text.length) return { headEnd, head };
    width *= 2;
  }
}
