import { describe, expect, it } from 'vitest';
import { formatTable } from './text-table.js';

describe('formatTable', () => {
  it('aligns columns, leaves the last unpadded and flattens line breaks', () => {
    expect(
      formatTable(
        ['A', 'BB', 'C'],
        [
          ['xyz', 'q', 'last'],
          ['1', 'two\nlines', ''],
        ],
      ),
    ).toEqual(['A    BB         C', 'xyz  q          last', '1    two lines']);
  });
});
