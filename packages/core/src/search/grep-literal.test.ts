import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { literalPrefilter, requiredLiteral } from './grep-literal.js';

describe('requiredLiteral', () => {
  it.each([
    ['TODO', 'TODO'],
    ['def \\w+\\(', 'def '],
    ['foo.*barbaz', 'barbaz'],
    ['ab?cd', 'cd'],
    ['ab+cd', 'bcd'],
    ['a|b', undefined],
    ['(foo|bar)baz', 'baz'],
    ['[abc]xyz', 'xyz'],
    ['x{2}yz', 'yz'],
    ['\\.test\\(', '.test('],
    ['^import ', 'import '],
    ['(a+)+$', undefined],
    ['a', undefined],
  ])('%s → %s', (source, expected) => {
    expect(requiredLiteral(source)).toBe(expected);
  });

  it('property: every string the regex matches contains the literal', () => {
    const atom = fc.constantFrom(
      'a',
      'b',
      'ab',
      '.',
      'a*',
      'b+',
      'c?',
      '(a|b)',
      '[ab]',
      '\\.',
      'x{1,2}',
    );
    fc.assert(
      fc.property(
        fc.array(atom, { minLength: 1, maxLength: 6 }),
        fc
          .array(fc.constantFrom('a', 'b', 'c', 'x', '.'), { maxLength: 12 })
          .map((a) => a.join('')),
        (atoms, text) => {
          const source = atoms.join('');
          const regex = new RegExp(source);
          const spec = literalPrefilter(source, '');
          if (!spec || !regex.test(text)) return true;
          return new RegExp(spec.source, spec.flags).test(text);
        },
      ),
      { numRuns: 5000 },
    );
  });
});
