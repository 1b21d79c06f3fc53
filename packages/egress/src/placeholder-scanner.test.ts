import { describe, expect, it } from 'vitest';
import {
  PLACEHOLDER_PREFIX,
  PlaceholderScanner,
  containsPlaceholder,
} from './placeholder-scanner.js';

// Built at run time so nothing in this file is itself a placeholder for a scan to trip on.
const placeholder = () => PLACEHOLDER_PREFIX + 'A'.repeat(43);

describe('PlaceholderScanner', () => {
  it('finds a placeholder split over every possible pair of chunks', () => {
    const text = Buffer.from(`x=${placeholder()}&y=1`, 'latin1');
    for (let cut = 0; cut <= text.length; cut += 1) {
      const scanner = new PlaceholderScanner();
      const found = scanner.push(text.subarray(0, cut)) || scanner.push(text.subarray(cut));
      expect(found, `cut at ${cut}`).toBe(true);
    }
  });

  it('finds a placeholder sent one byte per chunk', () => {
    const scanner = new PlaceholderScanner();
    const found = [...Buffer.from(placeholder(), 'latin1')].some((b) =>
      scanner.push(Buffer.from([b])),
    );
    expect(found).toBe(true);
  });

  it('passes ordinary bytes', () => {
    const scanner = new PlaceholderScanner();
    expect(scanner.push(Buffer.from('sbx-placeholder'))).toBe(false);
    expect(scanner.push(Buffer.from('_not-one'))).toBe(false);
  });

  it('finds a percent-encoded placeholder in text', () => {
    const encoded = placeholder().replace(/-/g, '%2D');
    expect(containsPlaceholder(`/search?q=${encoded}`)).toBe(true);
    expect(containsPlaceholder('/search?q=%zz')).toBe(false);
  });
});
