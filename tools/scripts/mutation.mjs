#!/usr/bin/env node
// The guard mutation run (`npm run mutation`): each checked-in mutant of tools/mutation/<area>.json
// is applied to the working tree alone, the tests it names run, and the file is restored. A mutant
// whose tests still pass is a guard no test holds.
//
//   node tools/scripts/mutation.mjs                  every area
//   node tools/scripts/mutation.mjs --area e2b       one area (repeatable, or comma-separated)
//   node tools/scripts/mutation.mjs --id ID          one mutant (repeatable)
//   node tools/scripts/mutation.mjs --check          only check that every mutant still applies
//   --timeout S       limit of any one test run (default 600 s)
//   --timeout-factor F  a mutant's run may take F times its area's baseline (default 3, at least
//                     30 s, at most --timeout); past it the run's process group is killed and the
//                     mutant counts as caught by timeout
//   --min-score X     exit 1 when an area's score is below X (0..1)
//   --out FILE        the JSON report (default tmp/mutation/report.json)
//
// Before an area's mutants, its tests run once unmutated: a failing baseline would make every
// mutant look caught, and one that skipped tests (a Redis or Docker list run without the service)
// would make its mutants survive unrun, so that area's mutants are then left unscored (a skip is
// accepted only from an area declaring "services": []). An area declaring services runs with
// SBX_REQUIRE_SERVICES=1, so a missing service fails the baseline loudly. Not part of `npm test`
// (a run takes minutes per area); the test command checks only that the lists still apply. A file
// edited by someone else while its mutant was applied is left as they made it (the mutant is
// named, `disturbed` in the report, unscored).
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_TIMEOUT_FACTOR,
  baselineProblem,
  mutantTimeLimitMs,
  skippedTests,
} from './mutation-baseline.mjs';
import { applyMutantSync, restoreMutantSync } from './mutant-file.mjs';
import { checkMutant, loadMutants, scoreRun } from './mutation-list.mjs';
import { killGroup, runInGroup } from './process-group.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LISTS = path.join(ROOT, 'tools/mutation');

function parseArgs(argv) {
  const opts = {
    areas: [],
    ids: [],
    check: false,
    timeoutS: 600,
    timeoutFactor: DEFAULT_TIMEOUT_FACTOR,
    minScore: null,
    out: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === '--area') opts.areas.push(...value().split(',').filter(Boolean));
    else if (arg === '--id') opts.ids.push(value());
    else if (arg === '--check') opts.check = true;
    else if (arg === '--timeout') opts.timeoutS = Number(value());
    else if (arg === '--timeout-factor') opts.timeoutFactor = Number(value());
    else if (arg === '--min-score') opts.minScore = Number(value());
    else if (arg === '--out') opts.out = value();
    else throw new Error(`unknown argument ${arg}`);
  }
  if (!(opts.timeoutS > 0)) throw new Error('--timeout takes a positive number of seconds');
  if (!(opts.timeoutFactor > 0)) throw new Error('--timeout-factor takes a positive number');
  if (opts.minScore !== null && !(opts.minScore >= 0 && opts.minScore <= 1)) {
    throw new Error('--min-score takes a number from 0 to 1');
  }
  return opts;
}

/**
 * Runs vitest on the given files in a process group of its own (see process-group.mjs). A mutant's
 * run stops at its first failing test (`bail`); the baseline's writes a JSON report to `jsonOut`,
 * so skipped tests can be found.
 */
async function runTests(files, { timeoutMs, services, bail = false, jsonOut }) {
  const args = ['vitest', 'run', '--reporter=dot', ...(bail ? ['--bail=1'] : [])];
  if (jsonOut) args.push('--reporter=json', `--outputFile.json=${jsonOut}`);
  const env = { ...process.env, CI: process.env.CI ?? '' };
  if (services !== null && services.length > 0) env.SBX_REQUIRE_SERVICES = '1';
  const result = await runInGroup('npx', [...args, ...files], {
    cwd: ROOT,
    env,
    timeoutMs,
    onGroup: (pid) => {
      runningGroup = pid;
    },
  });
  return { ...result, passed: result.code === 0 && !result.timedOut };
}

/** The baseline of one area: `{ ok, durationMs, message }`. */
async function runBaseline(area, files, services, opts) {
  const dir = await mkdtemp(path.join(tmpdir(), 'sbx-mutation-baseline-'));
  try {
    const jsonOut = path.join(dir, 'report.json');
    const run = await runTests(files, { timeoutMs: opts.timeoutS * 1000, services, jsonOut });
    if (!run.passed) {
      const why = run.timedOut ? `timed out after ${opts.timeoutS} s` : 'failed';
      return { ok: false, message: `[${area}] the baseline ${why}:\n${run.tail}` };
    }
    let skipped;
    try {
      skipped = skippedTests(JSON.parse(await readFile(jsonOut, 'utf8')));
    } catch (error) {
      return { ok: false, message: `[${area}] no usable JSON report: ${error.message}` };
    }
    const problem = baselineProblem({ area, services, skipped });
    if (problem !== null) return { ok: false, message: problem };
    return { ok: true, durationMs: run.durationMs };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// The mutant applied now, taken back on every exit path (a signal included), so an interrupted
// run never leaves a mutant in the working tree.
let applied = null;
/** The test run's process group now, killed with the run on a signal. */
let runningGroup;
function restoreSync() {
  if (!applied) return true;
  const state = applied;
  applied = null;
  return restoreMutantSync(state);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let mutants = await loadMutants(LISTS, opts.areas);
  if (opts.ids.length > 0) {
    const missing = opts.ids.filter((id) => !mutants.some((m) => m.id === id));
    if (missing.length > 0) throw new Error(`no mutant with id ${missing.join(', ')}`);
    mutants = mutants.filter((m) => opts.ids.includes(m.id));
  }
  const problems = (await Promise.all(mutants.map((m) => checkMutant(ROOT, m)))).flat();
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    process.exitCode = 1;
    return;
  }
  if (opts.check) {
    console.log(`${mutants.length} mutants apply cleanly`);
    return;
  }

  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      if (runningGroup !== undefined) killGroup(runningGroup);
      restoreSync();
      process.exit(130);
    });
  }

  const outcomes = new Map();
  const baselineFailures = [];
  const byArea = new Map();
  for (const m of mutants) byArea.set(m.area, [...(byArea.get(m.area) ?? []), m]);
  for (const [area, list] of byArea) {
    const runnable = list.filter((m) => !m.equivalent);
    const { services } = list[0];
    const baselineFiles = [...new Set(runnable.flatMap((m) => m.tests))];
    if (baselineFiles.length === 0) continue;
    process.stdout.write(`[${area}] baseline (${baselineFiles.length} test files) ... `);
    const baseline = await runBaseline(area, baselineFiles, services, opts);
    console.log(baseline.ok ? `ok (${(baseline.durationMs / 1000).toFixed(1)} s)` : 'REFUSED');
    if (!baseline.ok) {
      console.log(baseline.message);
      baselineFailures.push({ area, message: baseline.message });
      for (const m of runnable) outcomes.set(m.id, 'baseline-failed');
      continue;
    }
    const timeoutMs = mutantTimeLimitMs(baseline.durationMs, {
      factor: opts.timeoutFactor,
      capMs: opts.timeoutS * 1000,
    });
    for (const m of runnable) {
      const file = path.join(ROOT, m.file);
      let result;
      let restored;
      try {
        applied = applyMutantSync(file, m);
        result = await runTests(m.tests, { timeoutMs, services, bail: true });
      } finally {
        restored = restoreSync();
      }
      // A run over a file someone else was editing says nothing about the mutant.
      const outcome = !restored
        ? 'disturbed'
        : result.timedOut
          ? 'timeout'
          : result.passed
            ? 'survived'
            : 'caught';
      outcomes.set(m.id, outcome);
      const limit = outcome === 'timeout' ? ` (killed after ${timeoutMs / 1000} s)` : '';
      console.log(`[${area}] ${outcome.padEnd(8)} ${m.id}${limit}`);
    }
  }

  const areas = scoreRun(mutants, outcomes);
  const report = {
    date: new Date().toISOString(),
    areas,
    baselineFailures,
    mutants: mutants.map((m) => ({
      area: m.area,
      id: m.id,
      outcome: m.equivalent ? 'equivalent' : outcomes.get(m.id),
    })),
  };
  const out = opts.out ?? path.join(ROOT, 'tmp/mutation/report.json');
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);

  console.log('\narea                  mutants  equivalent  caught  survived  unscored  score');
  for (const a of areas) {
    const score = a.score === null ? '-' : `${(a.score * 100).toFixed(1)}%`;
    console.log(
      `${a.area.padEnd(22)}${String(a.total).padStart(7)}${String(a.equivalent).padStart(12)}` +
        `${String(a.caught).padStart(8)}${String(a.survived).padStart(10)}` +
        `${String(a.unscored).padStart(10)}${score.padStart(7)}`,
    );
  }
  for (const a of areas) {
    for (const s of a.survivors) console.log(`survivor ${a.area}/${s.id} (${s.file}): ${s.note}`);
  }
  console.log(`report: ${path.relative(ROOT, out)}`);
  if (opts.minScore !== null && areas.some((a) => a.score !== null && a.score < opts.minScore)) {
    process.exitCode = 1;
  }
}

main().catch((error) => {
  restoreSync();
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
