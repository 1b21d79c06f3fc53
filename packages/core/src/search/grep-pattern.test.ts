import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import { compileGrepPattern, escapeRegex, translatePythonRegex } from './grep-pattern.js';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('compileGrepPattern', () => {
  it('§10.1.9 is case-insensitive by default and case-sensitive on request', () => {
    expect(compileGrepPattern('TODO').test('todo: x')).toBe(true);
    expect(compileGrepPattern('TODO', { caseSensitive: true }).test('todo: x')).toBe(false);
    expect(compileGrepPattern('TODO', { caseSensitive: true }).test('TODO: x')).toBe(true);
  });

  it('§10.1.8 literal mode matches the text itself, not the regex', () => {
    const re = compileGrepPattern('(a+b)', { literal: true });
    expect(re.test('x (a+b) y')).toBe(true);
    expect(re.test('aab')).toBe(false);
    expect(compileGrepPattern('(a+b)').test('aab')).toBe(true);
  });

  it('literal mode escapes every metacharacter', () => {
    const text = '.*+?^${}()|[]\\/-';
    expect(compileGrepPattern(text, { literal: true }).test(`x${text}y`)).toBe(true);
    expect(new RegExp(escapeRegex(text)).source).toBe(escapeRegex(text));
  });

  it('§10.1.10 rejects an invalid regex with "Invalid regex pattern"', () => {
    const err = thrown(() => compileGrepPattern('[invalid'));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).code).toBe('INVALID_ARGUMENT');
    expect((err as Error).message).toMatch(/^Invalid regex pattern '\[invalid': /);
    expect((err as Error).message).not.toContain('/[invalid/');
  });

  it('never sets g or y, so repeated tests are stateless', () => {
    const re = compileGrepPattern('a');
    expect(re.flags).not.toMatch(/[gy]/);
    expect([re.test('a'), re.test('a'), re.test('a')]).toEqual([true, true, true]);
  });

  it('a leading (?i) turns folding on even when caseSensitive is set', () => {
    expect(compileGrepPattern('(?i)todo', { caseSensitive: true }).test('TODO')).toBe(true);
  });

  it('an empty pattern matches every line, as in Python', () => {
    expect(compileGrepPattern('').test('anything')).toBe(true);
  });

  it('rejects constructs JS cannot express with a typed error', () => {
    expect(() => compileGrepPattern('a++')).toThrow(InvalidArgumentError);
    expect(() => compileGrepPattern('(?>ab)')).toThrow(InvalidArgumentError);
  });
});

describe('translatePythonRegex', () => {
  it.each([
    ['(?P<word>\\w+)-(?P=word)', '(?<word>\\w+)-\\k<word>'],
    ['\\Afoo\\Z', '^foo$'],
    ['end\\z', 'end$'],
    ['a{,3}', 'a{0,3}'],
    ['x(?#note)y', 'xy'],
    ['[]a]', '[\\]a]'],
    ['[^]a]', '[^\\]a]'],
    ['[\\Z]', '[\\Z]'],
    ['\\\\A', '\\\\A'],
    ['plain', 'plain'],
  ])('%s → %s', (python, js) => {
    expect(translatePythonRegex(python).source).toBe(js);
  });

  it('maps leading inline flags', () => {
    expect(translatePythonRegex('(?i)abc')).toEqual({ source: 'abc', flags: 'i' });
    expect(translatePythonRegex('(?is)(?m)abc')).toEqual({ source: 'abc', flags: 'ims' });
    expect(translatePythonRegex('(?au)abc')).toEqual({ source: 'abc', flags: '' });
  });

  it('strips whitespace and comments in verbose mode, but not inside classes or escapes', () => {
    const { source } = translatePythonRegex('(?x) a b  # comment\n [ #] \\  c');
    expect(source).toBe('ab[ #]\\ c');
  });

  it('behaves like Python on translated samples', () => {
    const re = compileGrepPattern('(?P<q>["\'])(?P<body>.*?)(?P=q)', { caseSensitive: true });
    expect(re.exec('say "hi" now')?.groups?.body).toBe('hi');
    expect(compileGrepPattern('\\Adef \\w+\\(').test('def main():')).toBe(true);
    expect(compileGrepPattern('\\Adef \\w+\\(').test('  def main():')).toBe(false);
  });
});

describe('escapes Python does not know are errors, not literals', () => {
  it('\\p{L} is refused with a clear error (Python re has no \\p)', () => {
    expect(() => compileGrepPattern('\\p{L}+')).toThrow(
      "Invalid regex pattern '\\p{L}+': bad escape \\p",
    );
  });

  it('\\U0001F600 matches the emoji, as in Python', () => {
    expect(compileGrepPattern('smile \\U0001F600').test('smile 😀')).toBe(true);
    expect(compileGrepPattern('smile \\U0001F600').test('smile U0001F600')).toBe(false);
    expect(() => compileGrepPattern('\\U0011ffff')).toThrow(/bad escape/);
  });

  it('\\a is the bell character', () => {
    expect(compileGrepPattern('x\\ay').test('x\x07y')).toBe(true);
  });
});
