import { execFile } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import { shellQuote } from './shell-quote.js';

function echoThrough(shell: string, args: string[], words: string[]): Promise<string> {
  const script = `printf '%s\\0' ${words.map(shellQuote).join(' ')}`;
  return new Promise((resolve, reject) => {
    execFile(shell, [...args, '-c', script], { encoding: 'utf8' }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    );
  });
}

describe('shellQuote', () => {
  it('leaves plain words alone and quotes the rest', () => {
    expect(shellQuote('/mnt/user-data/a.txt')).toBe('/mnt/user-data/a.txt');
    expect(shellQuote('')).toBe("''");
    expect(shellQuote('a b')).toBe("'a b'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote('A=b')).toBe("'A=b'");
    expect(shellQuote('~/x')).toBe("'~/x'");
    expect(shellQuote('$(id)')).toBe("'$(id)'");
  });

  it('refuses a NUL character', () => {
    expect(() => shellQuote('a\0b')).toThrow(InvalidArgumentError);
  });

  for (const [label, shell, args] of [
    ['sh', 'sh', []],
    ['busybox ash', 'busybox', ['sh']],
  ] as const) {
    it(`property: ${label} reads every quoted word back unchanged`, async () => {
      const word = fc.string({
        unit: fc.oneof(
          fc.constantFrom(
            "'",
            '"',
            '\\',
            '$',
            '`',
            '!',
            '*',
            '?',
            '[',
            ' ',
            '\n',
            '\t',
            '~',
            '=',
            ';',
            '&',
            '|',
            '#',
            '-',
            '{',
            '}',
            '(',
            ')',
          ),
          fc.string({ minLength: 1, maxLength: 1 }),
          fc.constantFrom('é', '😀'),
        ),
        maxLength: 12,
      });
      await fc.assert(
        fc.asyncProperty(fc.array(word, { minLength: 1, maxLength: 4 }), async (words) => {
          const out = await echoThrough(shell, [...args], words);
          expect(out).toBe(words.map((w) => `${w}\0`).join(''));
        }),
        { numRuns: 60 },
      );
    });
  }
});
