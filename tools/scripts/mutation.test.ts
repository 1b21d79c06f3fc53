import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MIN_MUTANT_TIMEOUT_MS,
  baselineProblem,
  mutantTimeLimitMs,
  skippedTests,
} from './mutation-baseline.mjs';
import {
  applyMutant,
  checkMutant,
  loadMutants,
  parseMutantList,
  scoreRun,
} from './mutation-list.mjs';
import { applyMutantSync, restoreMutantSync } from './mutant-file.mjs';
import { runInGroup } from './process-group.mjs';

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

describe('areas that declare services', () => {
  it('a list may be an object with its services; each mutant carries them, an array declares none', () => {
    const [declared] = parseMutantList(
      'r',
      JSON.stringify({ services: ['redis', 'redis'], mutants: [mutant()] }),
    );
    expect(declared.services).toEqual(['redis']);
    expect(
      parseMutantList('n', JSON.stringify({ services: [], mutants: [mutant()] }))[0].services,
    ).toEqual([]);
    expect(parseMutantList('a', JSON.stringify([mutant()]))[0].services).toBeNull();
    const list = (raw: unknown) => () => parseMutantList('x', JSON.stringify(raw));
    expect(list({ services: ['postgres'], mutants: [] })).toThrow(/services must be an array/);
    expect(list({ services: [] })).toThrow(/mutants array/);
    expect(list({ services: [], mutants: [], extra: 1 })).toThrow(/unknown key\(s\) extra/);
  });
});

describe('a baseline with skipped tests', () => {
  // The shape of vitest's JSON reporter (`--reporter=json`), as a Redis list run without Redis
  // writes it: describe.skipIf skipped every test of the file.
  const report = {
    numTotalTests: 3,
    testResults: [
      {
        name: '/repo/packages/ownership-redis/src/redis-ownership-store.int.test.ts',
        assertionResults: [
          { fullName: 'RedisOwnershipStore take refuses del', status: 'skipped' },
          { fullName: 'RedisOwnershipStore claim', status: 'pending' },
        ],
      },
      { name: '/repo/a.test.ts', assertionResults: [{ fullName: 'a', status: 'passed' }] },
      { name: '/repo/b.test.ts', assertionResults: [{ title: 'later', status: 'todo' }] },
    ],
  };

  it('finds every test the report shows as not run', () => {
    expect(skippedTests(report)).toEqual([
      '/repo/packages/ownership-redis/src/redis-ownership-store.int.test.ts › RedisOwnershipStore take refuses del',
      '/repo/packages/ownership-redis/src/redis-ownership-store.int.test.ts › RedisOwnershipStore claim',
      '/repo/b.test.ts › later',
    ]);
    expect(skippedTests({ testResults: [] })).toEqual([]);
    expect(() => skippedTests({})).toThrow(/not a vitest JSON report/);
  });

  it('is refused with how to start the service, unless the area declares no services', () => {
    const skipped = skippedTests(report);
    const redis = baselineProblem({ area: 'ownership-redis', services: ['redis'], skipped });
    expect(redis).toMatch(/\[ownership-redis\] the baseline skipped 3 test\(s\)/);
    expect(redis).toMatch(/not scored/);
    expect(redis).toMatch(/source tools\/services\/start-redis\.sh/);
    expect(redis).toMatch(/skipped: .*take refuses del/);
    const undeclared = baselineProblem({ area: 'k', services: null, skipped });
    expect(undeclared).toMatch(/declare "services": \[\]/);
    expect(baselineProblem({ area: 'k', services: [], skipped })).toBeNull();
    expect(baselineProblem({ area: 'k', services: ['redis'], skipped: [] })).toBeNull();
    const many = baselineProblem({ area: 'k', services: null, skipped, limit: 1 });
    expect(many).toMatch(/and 2 more/);
  });
});

describe('a mutant that hangs', () => {
  it('gets a time limit of a multiple of the baseline, within a floor and the run’s cap', () => {
    expect(mutantTimeLimitMs(20_000, { capMs: 600_000 })).toBe(60_000);
    expect(mutantTimeLimitMs(20_000, { factor: 5, capMs: 600_000 })).toBe(100_000);
    expect(mutantTimeLimitMs(1_000, { capMs: 600_000 })).toBe(MIN_MUTANT_TIMEOUT_MS);
    expect(mutantTimeLimitMs(400_000, { capMs: 600_000 })).toBe(600_000);
    expect(() => mutantTimeLimitMs(-1, { capMs: 1 })).toThrow(RangeError);
    expect(() => mutantTimeLimitMs(1, { factor: 0, capMs: 1 })).toThrow(RangeError);
  });

  it('is killed with its whole process group at the limit and reported as timed out', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-mutation-'));
    const pidFile = path.join(dir, 'grandchild.pid');
    // A test run that hangs with a worker of its own: the child starts a grandchild (as vitest
    // starts its pool), records its pid, and both wait forever.
    const script = [
      "const { spawn } = require('node:child_process');",
      "const { writeFileSync } = require('node:fs');",
      "const g = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });",
      `writeFileSync(${JSON.stringify(pidFile)}, String(g.pid));`,
      "process.stdout.write('started\\n');",
      'setInterval(() => {}, 1000);',
    ].join('\n');
    const groups: (number | undefined)[] = [];
    const result = await runInGroup(process.execPath, ['-e', script], {
      cwd: dir,
      timeoutMs: 3_000,
      onGroup: (pid: number | undefined) => groups.push(pid),
    });
    expect(groups).toEqual([expect.any(Number), undefined]);
    expect(result.timedOut).toBe(true);
    expect(result.code).toBeNull();
    expect(result.tail).toContain('started');
    const grandchild = Number(await readFile(pidFile, 'utf8'));
    expect(await gone(grandchild)).toBe(true);
  }, 60_000);

  it('a run that ends in time reports its exit code and leaves nothing behind', async () => {
    const ok = await runInGroup(process.execPath, ['-e', 'process.exit(3)'], {
      cwd: ROOT,
      timeoutMs: 30_000,
    });
    expect(ok).toMatchObject({ code: 3, timedOut: false });
    expect(() => runInGroup('true', [], { cwd: ROOT, timeoutMs: 0 })).toThrow(RangeError);
  });
});

describe('a mutant applied in a shared working tree', () => {
  it('is taken back, unless the file was edited meanwhile: that edit is kept and the mutant named', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-mutation-'));
    const file = path.join(dir, 'a.ts');
    await writeFile(file, 'a();\nif (closed) return;\nb();\n');
    const [m] = parseMutantList('x', JSON.stringify([mutant()]));
    const state = applyMutantSync(file, m);
    expect(await readFile(file, 'utf8')).toBe('a();\n\nb();\n');
    expect(restoreMutantSync(state)).toBe(true);
    expect(await readFile(file, 'utf8')).toBe('a();\nif (closed) return;\nb();\n');

    const again = applyMutantSync(file, m);
    await writeFile(file, 'a();\n\nb();\nc(); // someone else’s edit\n');
    const warnings: string[] = [];
    expect(restoreMutantSync(again, (line: string) => warnings.push(line))).toBe(false);
    expect(await readFile(file, 'utf8')).toBe('a();\n\nb();\nc(); // someone else’s edit\n');
    expect(warnings).toEqual([expect.stringMatching(/src\/a\.ts was edited while mutant a-guard/)]);
  });
});

/** Whether `pid` is gone, polled within a bound: a killed process is reaped by init shortly after. */
async function gone(pid: number): Promise<boolean> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
      throw error;
    }
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
