import { InvalidArgumentError } from '@sbx/core';
import type { ReadFileOptions } from '@sbx/core';

function checkLine(name: string, value: number | undefined): void {
  if (value !== undefined && !Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(`${name} must be an integer, got ${value}`);
  }
}

/**
 * The whole text, or lines `startLine..endLine` (1-based, inclusive) joined with `\n` when a range
 * is asked for. A range past the end is `""`; a final line break does not count as an extra line.
 */
export function sliceLines(text: string, range: ReadFileOptions = {}): string {
  checkLine('startLine', range.startLine);
  checkLine('endLine', range.endLine);
  if (range.startLine === undefined && range.endLine === undefined) return text;
  const first = Math.max(range.startLine ?? 1, 1);
  const last = range.endLine ?? Number.POSITIVE_INFINITY;
  if (last < first) return '';
  const lines = text.split(/\r\n|\n|\r/);
  if (lines.at(-1) === '') lines.pop();
  return lines.slice(first - 1, Number.isFinite(last) ? last : undefined).join('\n');
}
