import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import { sliceLines } from './line-range.js';

const five = 'line1\nline2\nline3\nline4\nline5\n';

describe('sliceLines', () => {
  it('returns the text verbatim without a range', () => {
    expect(sliceLines('a\r\nb\rc\n')).toBe('a\r\nb\rc\n');
    expect(sliceLines(five, {})).toBe(five);
  });

  it('§1.2 ranges are 1-based and inclusive, joined without a final newline', () => {
    expect(sliceLines(five, { startLine: 3 })).toBe('line3\nline4\nline5');
    expect(sliceLines(five, { endLine: 2 })).toBe('line1\nline2');
    expect(sliceLines(five, { startLine: 2, endLine: 4 })).toBe('line2\nline3\nline4');
    expect(sliceLines(five, { startLine: 4, endLine: 99 })).toBe('line4\nline5');
  });

  it('a range past the end, or ending before it starts, is empty', () => {
    expect(sliceLines(five, { startLine: 99 })).toBe('');
    expect(sliceLines(five, { startLine: 6 })).toBe('');
    expect(sliceLines(five, { startLine: 3, endLine: 2 })).toBe('');
    expect(sliceLines('', { startLine: 1 })).toBe('');
  });

  it('a start below 1 counts from the first line', () => {
    expect(sliceLines(five, { startLine: 0, endLine: 1 })).toBe('line1');
    expect(sliceLines(five, { startLine: -5, endLine: 2 })).toBe('line1\nline2');
  });

  it('treats CRLF and lone CR as line breaks', () => {
    expect(sliceLines('a\r\nb\rc\n', { startLine: 1 })).toBe('a\nb\nc');
    expect(sliceLines('a\r\nb\r\n', { startLine: 2 })).toBe('b');
  });

  it('keeps a last line that has no newline and empty lines in between', () => {
    expect(sliceLines('a\n\nc', { startLine: 2 })).toBe('\nc');
  });

  it('rejects a line number that is not an integer', () => {
    expect(() => sliceLines(five, { startLine: 1.5 })).toThrow(InvalidArgumentError);
    expect(() => sliceLines(five, { endLine: Number.NaN })).toThrow(
      'endLine must be an integer, got NaN',
    );
  });
});
