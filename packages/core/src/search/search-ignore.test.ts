import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IGNORE_PATTERNS, shouldIgnoreName, shouldIgnorePath } from './search-ignore.js';

/** An independent fnmatch (the patterns only use `*`), to check the optimised matcher against. */
function fnmatch(pattern: string, name: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[\\s\\S]*');
  return new RegExp(`^${source}$`).test(name);
}

const anyPatternMatches = (name: string) => IGNORE_PATTERNS.some((p) => fnmatch(p, name));

describe('IGNORE_PATTERNS', () => {
  it('has exactly the 50 entries of the contract (39 exact names, 11 wildcards)', () => {
    expect(IGNORE_PATTERNS).toHaveLength(50);
    expect(new Set(IGNORE_PATTERNS).size).toBe(50);
    expect(IGNORE_PATTERNS.filter((p) => p.includes('*'))).toEqual([
      '*.egg-info',
      '*.swp',
      '*.swo',
      '*~',
      '*.lnk',
      '*.log',
      '*.tmp',
      '*.temp',
      '.upload-*.part',
      '*.bak',
      '*.cache',
    ]);
  });
});

describe('shouldIgnoreName', () => {
  const ignored = [
    '.git',
    'env',
    'logs',
    'x.swp',
    'core~',
    'thing.egg-info',
    '.env',
    'a.cache',
    '.cache',
    '~',
    '.upload-x.part',
    '.upload-.part',
    'node_modules',
    'build',
    'out',
    'Thumbs.db',
  ];
  const kept = [
    'foo.py',
    'myenv',
    'node_modules_x',
    'x.git',
    'log',
    'main.c',
    '.envrc',
    'x.log.1',
    '.upload-note.txt',
    'Build',
    'LOGS',
  ];

  it.each(ignored)('§10.1.18 ignores %s', (name) => {
    expect(shouldIgnoreName(name)).toBe(true);
    expect(anyPatternMatches(name)).toBe(true);
  });

  it.each(kept)('§10.1.18 keeps %s', (name) => {
    expect(shouldIgnoreName(name)).toBe(false);
    expect(anyPatternMatches(name)).toBe(false);
  });

  it('folds case only when asked', () => {
    expect(shouldIgnoreName('Build')).toBe(false);
    expect(shouldIgnoreName('Build', { caseInsensitive: true })).toBe(true);
    expect(shouldIgnoreName('X.LOG', { caseInsensitive: true })).toBe(true);
    expect(shouldIgnoreName('X.LOG')).toBe(false);
  });

  it('§10.1.18 property: equals "any pattern fnmatches the name"', () => {
    const pieces = fc.constantFrom(
      '.',
      'git',
      'env',
      'log',
      's',
      '~',
      'egg-info',
      'cache',
      '.upload-',
      'part',
      'node_modules',
      'x',
      'tmp',
      'temp',
      'bak',
      'swp',
      '-',
    );
    const names = fc.oneof(
      fc.array(pieces, { minLength: 1, maxLength: 4 }).map((a) => a.join('')),
      fc.string({ minLength: 1, maxLength: 8 }).filter((s) => !s.includes('/')),
      fc.constantFrom(...IGNORE_PATTERNS.map((p) => p.replace('*', 'zz'))),
    );
    fc.assert(
      fc.property(names, (name) => shouldIgnoreName(name) === anyPatternMatches(name)),
      {
        numRuns: 1000,
      },
    );
  });
});

describe('shouldIgnorePath', () => {
  it('§10.1.19 is true when any segment is ignored', () => {
    expect(shouldIgnorePath('a/node_modules/b')).toBe(true);
    expect(shouldIgnorePath('proj/.git/config')).toBe(true);
    expect(shouldIgnorePath('a/b/c.py')).toBe(false);
  });

  it('splits on backslashes and skips empty segments', () => {
    expect(shouldIgnorePath('a\\node_modules\\b')).toBe(true);
    expect(shouldIgnorePath('/a//b/')).toBe(false);
    expect(shouldIgnorePath('')).toBe(false);
  });
});
