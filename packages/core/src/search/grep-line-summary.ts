import { InvalidArgumentError } from '../errors/errors.js';
import { LINE_SUMMARY_LENGTH } from './search-limits.js';

/**
 * A matched line as shown to the caller: trailing CR/LF removed, and lines longer than `maxChars`
 * cut to `maxChars - 3` characters plus `...`. Lengths count code points, so an emoji is never
 * split into a lone surrogate.
 */
export function truncateLine(line: string, maxChars: number = LINE_SUMMARY_LENGTH): string {
  if (!Number.isInteger(maxChars) || maxChars < 3) {
    throw new InvalidArgumentError(`maxChars must be an integer of at least 3, got ${maxChars}`);
  }
  let end = line.length;
  while (end > 0 && (line.charCodeAt(end - 1) === 10 || line.charCodeAt(end - 1) === 13)) end--;
  const text = end === line.length ? line : line.slice(0, end);
  // Code units bound code points from above: short lines need no counting.
  if (text.length <= maxChars) return text;
  const keep = maxChars - 3;
  let points = 0;
  let cut = -1;
  for (let i = 0; i < text.length; points++) {
    if (points === keep) cut = i;
    if (points === maxChars) return `${text.slice(0, cut)}...`;
    const cp = text.codePointAt(i)!;
    i += cp > 0xffff ? 2 : 1;
  }
  return text;
}
