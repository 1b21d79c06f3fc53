import { describe, expect, it } from 'vitest';
import { truncateLine } from './grep-line-summary.js';

describe('truncateLine', () => {
  it('strips trailing CR/LF only', () => {
    expect(truncateLine('abc\r\n')).toBe('abc');
    expect(truncateLine('abc\n\n')).toBe('abc');
    expect(truncateLine('\tabc \n')).toBe('\tabc ');
  });

  it('keeps lines of up to 200 characters', () => {
    const line = 'x'.repeat(200);
    expect(truncateLine(line)).toBe(line);
    expect(truncateLine(`${line}\n`)).toBe(line);
  });

  it('cuts longer lines to 197 characters plus "..."', () => {
    const out = truncateLine('y'.repeat(201));
    expect(out).toHaveLength(200);
    expect(out).toBe(`${'y'.repeat(197)}...`);
  });

  it('honours a custom maximum', () => {
    expect(truncateLine('abcdefghij', 8)).toBe('abcde...');
    expect(truncateLine('abcdefgh', 8)).toBe('abcdefgh');
  });

  it('counts code points, never splitting a surrogate pair', () => {
    const emoji = '😀';
    expect(truncateLine(emoji.repeat(200))).toBe(emoji.repeat(200));
    const cut = truncateLine(emoji.repeat(201));
    expect(cut).toBe(`${emoji.repeat(197)}...`);
    expect(truncateLine(`${'a'.repeat(196)}${emoji}${emoji}zzzz`)).toBe(
      `${'a'.repeat(196)}${emoji}...`,
    );
  });
});
