import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { regexToPosixEre } from './grep-ere.js';
import { compileGrepPattern } from './grep-pattern.js';

const LINES = [
  'foo',
  'bar',
  'foobar',
  'Foo Bar',
  'a+b',
  'aab',
  '(a+b)',
  'x = 42;',
  '555-1234',
  'def main():',
  '  def nested():',
  'say "hi" now',
  "it's 'quoted'",
  'tab\there',
  'braces {x}',
  'brackets [y] ]',
  'back\\slash',
  'dash-and_under',
  'caret ^ here',
  'dollar $ there',
  'pipe | bar',
  'dots...',
  'TODO: fix',
  'todo lower',
  'abcabc',
  'xyzzy',
  'ümlaut café',
  '',
  'colon: a=b',
  'word boundary',
  'swordfish',
];

const PATTERNS = [
  'foo',
  'foo|bar',
  '^foo$',
  '^def \\w+\\(',
  '\\d{3}-\\d{4}',
  '\\bword\\b',
  'sword(?=fish)',
  '(?<!s)word',
  '(abc)\\1',
  '(?<x>ab)c\\k<x>',
  '[\\]y]',
  '[^\\d\\s]+',
  '[^a-z]',
  '[\\w.]+\\.{3}',
  '\\{x\\}',
  'a{',
  '\\s+here',
  '\\S+\\s\\S+',
  '\\W',
  '[\\^]',
  '[-a]',
  '[a-]',
  '[:a]',
  'a.?b',
  'a+?b',
  '(a|)b',
  '(?:a|b){2,}',
  'x{300}',
  '\\x41',
  '\\u0062ar',
  '\\$ there',
  '\\| bar',
  '\\\\slash',
  '[\'"]\\w+[\'"]',
  'caf.',
  'é',
  '[é]',
  '\\n',
  '[\\n]',
  '[^\\n]+',
  '\\0',
  '(?=x)',
  '|foo',
  'todo',
];

function run(cmd: string, args: string[], input: string): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, (err, stdout) => {
      if (err && (err as { code?: unknown }).code !== 1) reject(err);
      else
        resolve(
          stdout
            .split('\n')
            .filter(Boolean)
            .map((l) => Number(l.slice(0, l.indexOf(':')))),
        );
    });
    child.stdin!.end(input);
  });
}

async function available(cmd: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) => execFile(cmd, args, (err) => resolve(!err)));
}

const greps: [string, string, string[]][] = [
  ['GNU grep', 'grep', []],
  ['busybox grep', 'busybox', ['grep']],
];

describe('regexToPosixEre', () => {
  it('keeps plain expressions as they are', () => {
    expect(regexToPosixEre('foo|bar')).toBe('foo|bar');
    expect(regexToPosixEre('^a[0-9]+$')).toBe('^a[0-9]+$');
    expect(regexToPosixEre('(ab){2,3}')).toBe('(ab){2,3}');
  });

  it('rewrites class escapes and drops zero-width assertions', () => {
    expect(regexToPosixEre('\\d{3}')).toBe('[0-9]{3}');
    expect(regexToPosixEre('\\bword\\b')).toBe('word');
    expect(regexToPosixEre('a(?=b)c')).toBe('ac');
    expect(regexToPosixEre('(?<n>x)\\k<n>')).toBe('(x)(.*)');
    expect(regexToPosixEre('a+?')).toBe('a+');
    expect(regexToPosixEre('x{300}')).toBe('x{255,}');
  });

  it('escapes ERE metacharacters that JS takes literally', () => {
    expect(regexToPosixEre('a{')).toBe('a\\{');
    expect(regexToPosixEre('\\$')).toBe('\\$');
    expect(regexToPosixEre('\\/')).toBe('/');
  });

  it('widens to every line when an empty alternative makes the whole pattern optional', () => {
    expect(regexToPosixEre('|foo')).toBe('');
    expect(regexToPosixEre('(?=x)')).toBe('');
    expect(regexToPosixEre('(a|)b')).toBe('((a)?)b');
  });

  it('widens JS-only empty classes to any character', () => {
    expect(regexToPosixEre('a[]b')).toBe('a.b');
    expect(regexToPosixEre('a[^]b')).toBe('a.b');
  });

  for (const [label, cmd, pre] of greps) {
    it(`${label}: every line the JS expression matches is matched by the ERE`, async (ctx) => {
      if (!(await available(cmd, [...pre, '--help']))) ctx.skip();
      const input = `${LINES.join('\n')}\n`;
      for (const pattern of PATTERNS) {
        for (const caseSensitive of [true, false]) {
          const re = compileGrepPattern(pattern, { caseSensitive });
          const ere = regexToPosixEre(re.source);
          const expected = LINES.flatMap((l, i) => (re.test(l) ? [i + 1] : []));
          const got = await run(
            cmd,
            [...pre, '-n', '-E', ...(caseSensitive ? [] : ['-i']), '-e', ere],
            input,
          );
          const missing = expected.filter((n) => !got.includes(n));
          expect({ pattern, ere, caseSensitive, missing }).toEqual({
            pattern,
            ere,
            caseSensitive,
            missing: [],
          });
        }
      }
    });
  }

  it('GNU grep: plain expressions select exactly the same lines', async (ctx) => {
    if (!(await available('grep', ['--help']))) ctx.skip();
    const input = `${LINES.join('\n')}\n`;
    for (const pattern of [
      'foo|bar',
      '^def \\w+\\(',
      '\\d{3}-\\d{4}',
      '[\\]y]',
      'a.?b',
      '\\{x\\}',
    ]) {
      const re = compileGrepPattern(pattern, { caseSensitive: true });
      const expected = LINES.flatMap((l, i) => (re.test(l) ? [i + 1] : []));
      expect(await run('grep', ['-n', '-E', '-e', regexToPosixEre(re.source)], input)).toEqual(
        expected,
      );
    }
  });
});
