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

/** Lookahead of the text-oriented rule: `/`, end of text, or a character that cannot continue. */
export function isTextBoundaryAt(text: string, index: number): boolean {
  if (index >= text.length) return true;
  const ch = text.codePointAt(index) as number;
  if (ch === 0x2f) return true;
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
