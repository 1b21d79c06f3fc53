#!/usr/bin/env node
// The guard mutation run (`npm run mutation`): each checked-in mutant of tools/mutation/<area>.json
// is applied to the working tree alone, the tests it names run, and the file is restored. A mutant
// whose tests still pass is a guard no test holds.
//
//   node tools/scripts/mutation.mjs                  every area
//   node tools/scripts/mutation.mjs --area e2b       one area (repeatable, or comma-separated)
//   node tools/scripts/mutation.mjs --id ID          one mutant (repeatable)
//   node tools/scripts/mutation.mjs --check          only check that every mutant still applies
//   --timeout S       limit of one test run (default 600 s; a run past it counts as caught)
//   --min-score X     exit 1 when an area's score is below X (0..1)
//   --out FILE        the JSON report (default tmp/mutation/report.json)
//
// Before an area's mutants, its tests run once unmutated: a failing baseline would make every
// mutant look caught, so that area's mutants are then left unscored. Not part of `npm test` (a run
// takes minutes per area); the test command checks only that the lists still apply.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { applyMutant, checkMutant, loadMutants, scoreRun } from './mutation-list.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LISTS = path.join(ROOT, 'tools/mutation');

function parseArgs(argv) {
  const opts = { areas: [], ids: [], check: false, timeoutS: 600, minScore: null, out: null };
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
    else if (arg === '--min-score') opts.minScore = Number(value());
    else if (arg === '--out') opts.out = value();
    else throw new Error(`unknown argument ${arg}`);
  }
  if (!(opts.timeoutS > 0)) throw new Error('--timeout takes a positive number of seconds');
  if (opts.minScore !== null && !(opts.minScore >= 0 && opts.minScore <= 1)) {
    throw new Error('--min-score takes a number from 0 to 1');
  }
  return opts;
}

/** Runs vitest on the given files in a process group of its own, so a timeout ends all of it. */
function runTests(files, timeoutS) {
  return new Promise((resolve) => {
    const child = spawn('npx', ['vitest', 'run', '--reporter=dot', ...files], {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CI: process.env.CI ?? '' },
    });
    let tail = '';
    const keep = (chunk) => {
      tail = (tail + chunk.toString('utf8')).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone: the close event reports it.
      }
    }, timeoutS * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ passed: code === 0 && !timedOut, timedOut, tail });
    });
  });
}

// The file under mutation and its original text, restored on every exit path (a signal included),
// so an interrupted run never leaves a mutant in the working tree.
let applied = null;
function restoreSync() {
  if (!applied) return;
  // A synchronous write: this runs from signal handlers, where nothing async completes.
  writeFileSync(applied.file, applied.original);
  applied = null;
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
      restoreSync();
      process.exit(130);
    });
  }

  const outcomes = new Map();
  const byArea = new Map();
  for (const m of mutants) byArea.set(m.area, [...(byArea.get(m.area) ?? []), m]);
  for (const [area, list] of byArea) {
    const runnable = list.filter((m) => !m.equivalent);
    const baselineFiles = [...new Set(runnable.flatMap((m) => m.tests))];
    if (baselineFiles.length > 0) {
      process.stdout.write(`[${area}] baseline (${baselineFiles.length} test files) ... `);
      const baseline = await runTests(baselineFiles, opts.timeoutS);
      console.log(baseline.passed ? 'ok' : 'FAILED');
      if (!baseline.passed) {
        console.log(baseline.tail);
        for (const m of runnable) outcomes.set(m.id, 'baseline-failed');
        continue;
      }
    }
    for (const m of runnable) {
      const file = path.join(ROOT, m.file);
      const original = await readFile(file, 'utf8');
      applied = { file, original };
      let result;
      try {
        await writeFile(file, applyMutant(original, m));
        result = await runTests(m.tests, opts.timeoutS);
      } finally {
        restoreSync();
      }
      const outcome = result.timedOut ? 'timeout' : result.passed ? 'survived' : 'caught';
      outcomes.set(m.id, outcome);
      console.log(`[${area}] ${outcome.padEnd(8)} ${m.id}`);
    }
  }

  const areas = scoreRun(mutants, outcomes);
  const report = {
    date: new Date().toISOString(),
    areas,
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
