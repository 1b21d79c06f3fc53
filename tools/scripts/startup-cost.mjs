#!/usr/bin/env node
// What a newcomer waits for: the cold import of @sbx/core + @sbx/local against a bare `node -e 0`,
// and (with --build) a clean build of every package. Writes bench/results/startup.{json,md}.
//
//   node tools/scripts/startup-cost.mjs [--runs N] [--build]
//
// Each import sample is a fresh process (nothing cached in memory); the two commands alternate so
// both see the same machine load. The build is timed with Nx's cache skipped.
import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const RUNS = runsAt >= 0 ? Number(args[runsAt + 1]) : 15;
const IMPORT = "await import('@sbx/core'); await import('@sbx/local');";

function timeMs(command, commandArgs) {
  const start = process.hrtime.bigint();
  const r = spawnSync(command, commandArgs, { cwd: ROOT, stdio: 'ignore' });
  if (r.status !== 0) throw new Error(`${command} ${commandArgs.join(' ')} exited ${r.status}`);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const bare = [];
const imports = [];
for (let i = 0; i < RUNS; i++) {
  bare.push(timeMs(process.execPath, ['-e', '0']));
  imports.push(timeMs(process.execPath, ['--input-type=module', '-e', IMPORT]));
}
const round = (v) => Math.round(v * 10) / 10;
const rows = [
  {
    benchmark: 'cold import of @sbx/core + @sbx/local',
    sbx_ms: round(median(imports)),
    baseline: 'node -e 0',
    baseline_ms: round(median(bare)),
    ratio: Math.round((median(imports) / median(bare)) * 100) / 100,
    note: `median of ${RUNS} fresh processes; target ≤ 1.5`,
  },
];
if (args.includes('--build')) {
  const ms = timeMs('npx', [
    'nx',
    'run-many',
    '-t',
    'build',
    '--skip-nx-cache',
    '--output-style=static',
  ]);
  rows.push({
    benchmark: 'clean build of every package',
    sbx_ms: round(ms),
    baseline: 'target: 60 s',
    baseline_ms: 60_000,
    ratio: round((ms / 60_000) * 100) / 100,
    note: 'Nx cache skipped',
  });
}
const report = {
  package: 'startup',
  started: new Date().toISOString(),
  machine: {
    platform: process.platform,
    node: process.version,
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model,
  },
  rows,
};
const markdown = [
  '## startup: import and build cost',
  '',
  '| benchmark | sbx (ms) | anchor | anchor (ms) | ratio |',
  '|---|---|---|---|---|',
  ...rows.map(
    (r) => `| ${r.benchmark} | ${r.sbx_ms} | ${r.baseline} | ${r.baseline_ms} | ${r.ratio} |`,
  ),
  '',
].join('\n');
const out = path.join(ROOT, 'bench', 'results');
await mkdir(out, { recursive: true });
await writeFile(path.join(out, 'startup.json'), JSON.stringify(report, null, 2) + '\n');
await writeFile(path.join(out, 'startup.md'), markdown);
console.log(markdown);
