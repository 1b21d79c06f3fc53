import { describe, expect, it } from 'vitest';
import {
  truncateBashOutput,
  truncateHead,
  truncateLsOutput,
  truncateMiddle,
  truncateReadFileOutput,
} from './truncation.js';

const text = (n: number) =>
  Array.from({ length: n }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');

describe('§9A.8 truncation formulas', () => {
  describe('middle truncation (bash_output_max_chars)', () => {
    it('leaves output that fits, and any output when the cap is 0', () => {
      expect(truncateBashOutput(text(80), 80)).toBe(text(80));
      expect(truncateBashOutput(text(5000), 0)).toBe(text(5000));
    });

    it('100 chars into 80: 16 head chars, the marker with 67 skipped, 17 tail chars (79 total)', () => {
      const input = text(100);
      const out = truncateBashOutput(input, 80);
      const marker = '\n... [middle truncated: 67 chars skipped] ...\n';
      expect(out).toBe(input.slice(0, 16) + marker + input.slice(100 - 17));
      expect(out).toHaveLength(79);
    });

    it('falls back to the first max chars when the marker alone does not fit', () => {
      expect(truncateMiddle(text(100), 10)).toBe(text(10));
    });

    it('never exceeds the cap', () => {
      for (const total of [50, 99, 1000, 123_456]) {
        for (const max of [1, 20, 47, 48, 60, 999]) {
          expect(truncateMiddle(text(total), max).length).toBeLessThanOrEqual(max);
        }
      }
    });
  });

  describe('head truncation', () => {
    it('read_file: 300 chars into 200 keeps 98 chars plus the marker (199 total)', () => {
      const input = text(300);
      const out = truncateReadFileOutput(input, 200);
      expect(out).toBe(
        input.slice(0, 98) +
          '\n... [truncated: showing first 98 of 300 chars. Use start_line/end_line to read a specific range] ...',
      );
      expect(out).toHaveLength(199);
    });

    it('ls: same formula with the narrower-path hint', () => {
      const input = text(300);
      const out = truncateLsOutput(input, 200);
      expect(out).toBe(
        input.slice(0, 101) +
          '\n... [truncated: showing first 101 of 300 chars. Use a more specific path to see fewer results] ...',
      );
      expect(out).toHaveLength(200);
    });

    it('0 disables; fitting output is unchanged; results never exceed the cap', () => {
      expect(truncateReadFileOutput(text(1000), 0)).toBe(text(1000));
      expect(truncateLsOutput(text(20), 20)).toBe(text(20));
      for (const max of [1, 50, 101, 150, 5000]) {
        expect(truncateHead(text(10_000), max, 'hint').length).toBeLessThanOrEqual(max);
      }
    });
  });
});
