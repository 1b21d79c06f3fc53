import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from './errors.js';
import { compileGlob, globNameFilter, pathMatchesGlob } from './glob-match.js';

describe('pathMatchesGlob', () => {
  it.each([
    ['*.py', 'a/b/c.py', true],
    ['*.py', 'c.py', true],
    ['*.py', 'c.pyc', false],
    ['**/*.py', 'app.py', true],
    ['**/*.py', 'pkg/util.py', true],
    ['**/*.py', 'a/b/c.py', true],
    ['**', 'src', true],
    ['**', 'a/b', true],
    ['*.PY', 'x.py', false],
    ['SKILL.md', 'public/demo/SKILL.md', true],
    ['**/SKILL.md', 'public/demo/SKILL.md', true],
    ['*', '.hidden', true],
    ['*.env', '.env', true],
    ['?.txt', 'a.txt', true],
    ['?.txt', 'ab.txt', false],
    ['[!a].txt', 'b.txt', true],
    ['[!a].txt', 'a.txt', false],
    ['*.{js,ts}', 'x/y.ts', true],
    ['src/*.py', 'src/x.py', true],
    ['./src/*.py', 'src/x.py', true],
    ['src/', 'src', true],
  ])('%s ~ %s → %s', (pattern, path, expected) => {
    expect(pathMatchesGlob(pattern, path)).toBe(expected);
  });

  it('anchors a pattern with "/" at the root (unlike the right-anchored reference)', () => {
    expect(pathMatchesGlob('src/*.py', 'a/src/x.py')).toBe(false);
  });

  it('lets "**" span several directories (unlike the reference, where it spans one)', () => {
    expect(pathMatchesGlob('a/**/b.py', 'a/x/b.py')).toBe(true);
    expect(pathMatchesGlob('a/**/b.py', 'a/x/y/b.py')).toBe(true);
    expect(pathMatchesGlob('a/**/b.py', 'a/b.py')).toBe(true);
  });

  it('keeps "*" inside one segment', () => {
    expect(pathMatchesGlob('src/*.py', 'src/a/x.py')).toBe(false);
  });

  it('matches case-insensitively only when asked', () => {
    expect(pathMatchesGlob('*.PY', 'x.py', { caseSensitive: false })).toBe(true);
  });

  it.each(['', '   ', '/abs/*.py', './', '/'])('refuses %j with InvalidArgumentError', (p) => {
    expect(() => compileGlob(p)).toThrow(InvalidArgumentError);
  });

  it('property: a pattern without "/" only looks at the last segment', () => {
    const seg = fc.constantFrom('a', 'b.py', 'c.txt', '.x', 'src', 'd.py');
    const pats = fc.constantFrom('*.py', '*', 'a', '?', '.*', '*.txt', 'b.*', '[a-c]*');
    fc.assert(
      fc.property(pats, fc.array(seg, { minLength: 1, maxLength: 4 }), (pattern, segments) => {
        const rel = segments.join('/');
        return pathMatchesGlob(pattern, rel) === pathMatchesGlob(pattern, segments.at(-1)!);
      }),
    );
  });

  it('property: "**/" + name matches the name at every depth', () => {
    const seg = fc.constantFrom('a', 'b', 'src', '.hidden');
    fc.assert(
      fc.property(fc.array(seg, { maxLength: 4 }), (dirs) =>
        pathMatchesGlob('**/x.py', [...dirs, 'x.py'].join('/')),
      ),
    );
  });
});

describe('globNameFilter', () => {
  it.each([
    ['*.py', '*.py'],
    ['src/**/*.ts', '*.ts'],
    ['**/SKILL.md', 'SKILL.md'],
    ['src/**', undefined],
    ['*.{js,ts}', undefined],
    ['!(x)', undefined],
    ['[!a].txt', undefined],
    ['a\\*b', undefined],
  ])('%s → %s', (pattern, expected) => {
    expect(globNameFilter(pattern)).toBe(expected);
  });
});
