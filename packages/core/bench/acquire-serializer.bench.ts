/**
 * AcquireSerializer throughput and memory bound.
 *
 * 1,000,000 hold/release cycles over 10,000 keys with 256 concurrent callers (keys drawn from a
 * seeded generator, so callers do collide on keys and queue). Reports ops/s, the peak lock-table
 * size, the table size afterwards (must be 0: entries are reclaimed, nothing grows with the key
 * space) and heap growth across the run. A second scenario aborts 10% of the waits to show that
 * cancelled waiters are reclaimed too. Exit code 1 if any table is not empty afterwards.
 *
 * Run: `npm run bench -w @sbx/core` (bundles this file with tsup, runs it with --expose-gc).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AcquireSerializer, serializerKey } from '../src/serializer/acquire-serializer.js';

interface ScenarioResult {
  scenario: string;
  cycles: number;
  keys: number;
  concurrency: number;
  abortedWaits: number;
  durationMs: number;
  opsPerSec: number;
  peakTableSize: number;
  tableSizeAfter: number;
  heapUsedBeforeBytes: number;
  heapUsedAfterBytes: number;
  heapGrowthBytes: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

function collect(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

/** xorshift32: deterministic key choice, so runs are comparable. */
function generator(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x1_0000_0000;
  };
}

async function scenario(
  name: string,
  cycles: number,
  keyCount: number,
  concurrency: number,
  abortEvery: number,
): Promise<ScenarioResult> {
  const keys = Array.from({ length: keyCount }, (_, i) =>
    serializerKey('bench-user', `thread-${i}`),
  );
  const random = generator(0x5eed + cycles + abortEvery);
  const serializer = new AcquireSerializer();
  let issued = 0;
  let peak = 0;
  let aborted = 0;
  // A ready-made reason: a default abort() builds a DOMException, whose cost would dominate.
  const reason = new Error('bench abort');

  const heapBefore = collect();
  const started = process.hrtime.bigint();
  const worker = async (): Promise<void> => {
    while (issued < cycles) {
      const n = issued;
      issued += 1;
      const key = keys[Math.floor(random() * keyCount)] as string;
      if (abortEvery > 0 && n % abortEvery === 0) {
        const controller = new AbortController();
        const waiting = serializer.hold(key, () => undefined, { signal: controller.signal });
        controller.abort(reason);
        try {
          await waiting;
        } catch {
          aborted += 1;
        }
        continue;
      }
      await serializer.hold(key, async () => {
        if (serializer.size > peak) peak = serializer.size;
        // Yield inside the section, as a real transition would, so holders overlap.
        await undefined;
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
  const tableSizeAfter = serializer.size;
  serializer.close();
  const heapAfter = collect();

  return {
    scenario: name,
    cycles,
    keys: keyCount,
    concurrency,
    abortedWaits: aborted,
    durationMs: Math.round(durationMs),
    opsPerSec: Math.round(cycles / (durationMs / 1000)),
    peakTableSize: peak,
    tableSizeAfter,
    heapUsedBeforeBytes: heapBefore,
    heapUsedAfterBytes: heapAfter,
    heapGrowthBytes: heapAfter - heapBefore,
  };
}

async function repoRoot(): Promise<string> {
  let dir = process.cwd();
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const parsed = JSON.parse(await readFile(manifest, 'utf8')) as { workspaces?: unknown };
      if (parsed.workspaces !== undefined) return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the repository root from ' + process.cwd());
    dir = parent;
  }
}

function table(results: ScenarioResult[]): string {
  const mib = (b: number) => (b / 1024 / 1024).toFixed(2);
  const rows = results.map(
    (r) =>
      `| ${r.scenario} | ${r.cycles.toLocaleString('en-US')} | ${r.keys.toLocaleString('en-US')} | ${r.concurrency} | ${r.abortedWaits.toLocaleString('en-US')} | ${r.opsPerSec.toLocaleString('en-US')} | ${r.peakTableSize} | ${r.tableSizeAfter} | ${mib(r.heapGrowthBytes)} |`,
  );
  return [
    '| scenario | cycles | keys | concurrency | aborted waits | ops/s | peak table | table after | heap growth (MiB) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

async function main(): Promise<void> {
  if (gc === undefined)
    console.warn('gc() is not exposed (run node with --expose-gc); heap figures are noisy');
  // Warm the JIT so the measured run is not dominated by tier-up.
  await scenario('warm-up', 50_000, 1_000, 64, 0);
  const results = [
    await scenario('hold/release', 1_000_000, 10_000, 256, 0),
    await scenario('hold/release, 10% of waits aborted', 1_000_000, 10_000, 256, 10),
  ];
  const root = await repoRoot();
  const outDir = join(root, 'bench', 'results');
  await mkdir(outDir, { recursive: true });
  const report = {
    benchmark: 'core-acquire-serializer',
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    gcExposed: gc !== undefined,
    date: new Date().toISOString(),
    results,
  };
  const markdown = [
    '# @sbx/core AcquireSerializer',
    '',
    `Node ${process.version}, ${report.platform}, ${report.date}. Table size after must be 0.`,
    'Aborted waits include the cost of the AbortController and of the AbortedError each raises.',
    '',
    table(results),
    '',
  ].join('\n');
  await writeFile(
    join(outDir, 'core-acquire-serializer.json'),
    JSON.stringify(report, null, 2) + '\n',
  );
  await writeFile(join(outDir, 'core-acquire-serializer.md'), markdown);
  console.log(markdown);
  if (results.some((r) => r.tableSizeAfter !== 0)) {
    console.error('FAIL: the lock table was not empty after the workload');
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
