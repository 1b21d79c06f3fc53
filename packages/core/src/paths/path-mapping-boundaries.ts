/**
 * Where a path inside free text starts and ends. Kept in one place as regex source fragments so
 * the compiled patterns (`buildOutputMaskPattern`) and the direct scanners (`scanPathOccurrences`)
 * are derived from the same rule and cannot drift apart.
 *
 * "Word" follows Python's Unicode `\w` (letters, numbers, underscore), so a root followed by `é`
 * is a sibling name, not a boundary, exactly as for `2`, `-`, `.` or `_`.
 */

/** Characters that continue a path segment: a root followed by one of them is a sibling name. */
export const SEGMENT_CONTINUATION_CLASS = String.raw`\p{L}\p{N}_./-`;
/** Characters a path tail never contains: whitespace, quotes and shell punctuation. */
export const PATH_TAIL_STOP_CLASS = String.raw`\s"';&|<>()`;
/** Shell-oriented end of a container path in a command (a `:` or `,` does not end it there). */
export const COMMAND_BOUNDARY_CLASS = String.raw`\s"';&|<>()`;

const continuesSegment = new RegExp(`[${SEGMENT_CONTINUATION_CLASS}]`, 'u');
const endsCommandPath = new RegExp(`[${COMMAND_BOUNDARY_CLASS}]`, 'u');
const tailRun = new RegExp(`[^${PATH_TAIL_STOP_CLASS}]*`, 'uy');

/** ASCII characters that continue a segment, looked up instead of matched (masking asks often). */
const asciiContinues = Uint8Array.from({ length: 128 }, (_, c) =>
  continuesSegment.test(String.fromCharCode(c)) ? 1 : 0,
);

/** Lookahead of the text-oriented rule: `/`, end of text, or a character that cannot continue. */
export function isTextBoundaryAt(text: string, index: number): boolean {
  if (index >= text.length) return true;
  const ch = text.codePointAt(index) as number;
  if (ch === 0x2f) return true;
  if (ch < 128) return asciiContinues[ch] === 0;
  return !continuesSegment.test(String.fromCodePoint(ch));
}

/** Lookahead of the shell-oriented rule: `/`, end of text, whitespace, a quote or punctuation. */
export function isCommandBoundaryAt(text: string, index: number): boolean {
  if (index >= text.length) return true;
  const ch = text.codePointAt(index) as number;
  if (ch === 0x2f) return true;
  return endsCommandPath.test(String.fromCodePoint(ch));
}

/**
 * `true` unless the character before `index` continues a name, so `/tmp/mnt/skills` does not
 * contain the virtual root `/mnt/skills`. A preceding `/` is a boundary (`file:///mnt/...`).
 */
export function isLeftBoundaryAt(text: string, index: number): boolean {
  if (index === 0) return true;
  const before = text.codePointAt(index - 1) as number;
  // A low surrogate: step back to the start of the pair.
  const ch =
    before >= 0xdc00 && before <= 0xdfff && index >= 2
      ? (text.codePointAt(index - 2) as number)
      : before;
  if (ch === 0x2f) return true;
  return !continuesSegment.test(String.fromCodePoint(ch));
}

/** End index of a path tail that starts at `index` (exclusive): the run of non-stop characters. */
export function tailEnd(text: string, index: number): number {
  tailRun.lastIndex = index;
  tailRun.exec(text);
  return tailRun.lastIndex;
}

const tailStop = new RegExp(`[${PATH_TAIL_STOP_CLASS}]`, 'u');
const asciiTailStop = Uint8Array.from({ length: 128 }, (_, c) =>
  tailStop.test(String.fromCharCode(c)) ? 1 : 0,
);

/**
 * `tailEnd`, but never past `limit`: the scan stops there, so a caller that cuts tails at the next
 * path reads each character once (the sticky pattern would run on to the stop character every
 * time, which made masking `W/W/W/...` quadratic). Every stop character is in the BMP, so a
 * UTF-16 unit is tested alone.
 */
export function tailEndBefore(text: string, index: number, limit: number): number {
  let i = index;
  for (; i < limit; i++) {
    const c = text.charCodeAt(i);
    if (c < 128 ? asciiTailStop[c] === 1 : tailStop.test(text[i] as string)) break;
  }
  return i;
}
