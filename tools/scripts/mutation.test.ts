import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  applyMutant,
  checkMutant,
  loadMutants,
  parseMutantList,
  scoreRun,
} from './mutation-list.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const mutant = (over: Record<string, unknown> = {}) => ({
  id: 'a-guard',
  file: 'src/a.ts',
  find: 'if (closed) return;',
  replace: '',
  tests: ['src/a.test.ts'],
  ...over,
});

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('mutation lists', () => {
  it('every checked-in mutant still applies to exactly one place and names existing tests', async () => {
    const mutants = await loadMutants(path.join(ROOT, 'tools/mutation'));
    const problems = (await Promise.all(mutants.map((m) => checkMutant(ROOT, m)))).flat();
    expect(problems).toEqual([]);
  });

  it('refuses entries that would be scored wrongly', () => {
    const list = (entries: unknown[]) => () => parseMutantList('x', JSON.stringify(entries));
    expect(list([mutant({ id: 'Bad Id' })])).toThrow(/id must match/);
    expect(list([mutant(), mutant()])).toThrow(/duplicate id a-guard/);
    expect(list([mutant({ replace: 'if (closed) return;' })])).toThrow(/replace equals find/);
    expect(list([mutant({ find: '' })])).toThrow(/find is empty/);
    expect(list([mutant({ tests: [] })])).toThrow(/names the tests/);
    expect(list([mutant({ equivalent: true, tests: [] })])).toThrow(/says why/);
    expect(list([mutant({ equivalent: true, tests: [], note: 'dead after x' })])()).toHaveLength(1);
    expect(() => parseMutantList('x', '{')).toThrow(/not JSON/);
  });

  it('applies a mutant only where its snippet stands exactly once', () => {
    const m = parseMutantList('x', JSON.stringify([mutant()]))[0];
    expect(applyMutant('a();\nif (closed) return;\nb();', m)).toBe('a();\n\nb();');
    expect(() => applyMutant('a();', m)).toThrow(/not found/);
    expect(() => applyMutant('if (closed) return;if (closed) return;', m)).toThrow(
      /more than once/,
    );
  });

  it('names a missing file or test, and an unknown area', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-mutation-'));
    await mkdir(path.join(dir, 'src'));
    await writeFile(path.join(dir, 'src/a.ts'), 'if (closed) return;\n');
    const [m] = parseMutantList('x', JSON.stringify([mutant()]));
    expect(await checkMutant(dir, m)).toEqual(['a-guard: no test file src/a.test.ts']);
    await rm(path.join(dir, 'src/a.ts'));
    expect(await checkMutant(dir, m)).toContain('a-guard: no file src/a.ts');
    await writeFile(path.join(dir, 'known.json'), '[]');
    await expect(loadMutants(dir, ['nope'])).rejects.toThrow(
      /unknown area\(s\) nope; known: known/,
    );
  });

  it('scores per area: timeouts count as caught, a failed baseline as unscored', () => {
    const list = parseMutantList(
      'k',
      JSON.stringify([
        mutant({ id: 'm1' }),
        mutant({ id: 'm2' }),
        mutant({ id: 'm3' }),
        mutant({ id: 'm4' }),
        mutant({ id: 'm5', equivalent: true, note: 'same as m1' }),
      ]),
    );
    const outcomes = new Map([
      ['m1', 'caught'],
      ['m2', 'timeout'],
      ['m3', 'survived'],
      ['m4', 'baseline-failed'],
    ]);
    const [area] = scoreRun(list, outcomes);
    expect(area).toMatchObject({
      area: 'k',
      total: 5,
      equivalent: 1,
      caught: 2,
      survived: 1,
      unscored: 1,
      score: 2 / 3,
    });
    expect(area.survivors.map((s: { id: string }) => s.id)).toEqual(['m3']);
    expect(area.equivalents).toEqual([{ id: 'm5', note: 'same as m1' }]);
  });
});
