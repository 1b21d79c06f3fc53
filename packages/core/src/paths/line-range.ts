import { InvalidArgumentError } from '../errors/errors.js';

/** Lines `startLine..endLine` of a text file, 1-based and inclusive; either end may be left open. */
export interface LineRange {
  /** 1-based, inclusive. */
  startLine?: number;
  /** 1-based, inclusive. */
  endLine?: number;
}

function checkLine(name: string, value: number | undefined): void {
  if (value !== undefined && !Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(`${name} must be an integer, got ${value}`);
  }
}

/**
 * The whole text, or lines `startLine..endLine` (1-based, inclusive) joined with `\n` when a range
 * is given. A range past the end gives `""`; a final line break does not make an extra empty line.
 * For sandboxes that receive a file whole; one that can stream should stop reading after `endLine`.
 */
export function sliceLines(text: string, range: LineRange = {}): string {
  checkLine('startLine', range.startLine);
  checkLine('endLine', range.endLine);
  if (range.startLine === undefined && range.endLine === undefined) return text;
  const start = Math.max(range.startLine ?? 1, 1);
  const end = range.endLine ?? Number.POSITIVE_INFINITY;
  if (end < start) return '';
  const lines = text.split(/\r\n|\r|\n/);
  if (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines.slice(start - 1, end === Number.POSITIVE_INFINITY ? undefined : end).join('\n');
}
