/**
 * The pieces every package benchmark repeats: latency summaries, timing one call, and writing
 * `bench/results/<name>.{json,md}` at the repository root (read by tools/scripts/bench-report.mjs).
 * Benchmarks import it by relative path; tsup bundles it into each benchmark.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** One latency row of a results table. */
export interface LatencyRow {
  path: string;
  samples: number;
  p50Ms: number;
  p95Ms: number;
  meanMs: number;
  minMs: number;
  maxMs: number;
}

/** Rounds to two decimals, the precision every results table shows. */
export const round2 = (v: number): number => Math.round(v * 100) / 100;

/** Nearest-rank percentiles, mean, min and max of `samples` (milliseconds). */
export function summarize(path: string, samples: readonly number[]): LatencyRow {
  if (samples.length === 0) throw new Error(`no samples for ${path}`);
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return {
    path,
    samples: samples.length,
    p50Ms: round2(at(0.5)),
    p95Ms: round2(at(0.95)),
    meanMs: round2(samples.reduce((s, v) => s + v, 0) / samples.length),
    minMs: round2(sorted[0]!),
    maxMs: round2(sorted.at(-1)!),
  };
}

/** A monotonic clock in milliseconds. */
export const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** Runs `fn` and returns its duration (ms) with its value. */
export async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = nowMs();
  const value = await fn();
  return [nowMs() - start, value];
}

/** The repository root: the nearest directory up from the working directory holding nx.json. */
export function repoRoot(): string {
  let dir = process.cwd();
  while (!existsSync(join(dir, 'nx.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('repository root (nx.json) not found');
    dir = up;
  }
  return dir;
}

/** Writes `bench/results/<name>.json` and `<name>.md` and prints the markdown. */
export async function writeBenchResults(
  name: string,
  report: unknown,
  markdown: string,
): Promise<void> {
  const outDir = join(repoRoot(), 'bench', 'results');
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, `${name}.json`), JSON.stringify(report, null, 2) + '\n');
  await writeFile(join(outDir, `${name}.md`), markdown);
  console.log(markdown);
}

/** A sample count from the environment (`SBX_BENCH_*`), else `fallback`; a positive integer. */
export function envCount(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${name} must be a positive integer, got ${raw}`);
  return n;
}
