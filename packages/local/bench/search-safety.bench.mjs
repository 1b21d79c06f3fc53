// Benchmarks of what a hostile or careless search costs the rest of the process: the event-loop
// delay a concurrent timer sees during searches, and the memory of a ranged read of a huge file.
// Used by local.bench.mjs; each function returns result rows.
import { createWriteStream } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathMapping } from '@sbx/core';
import { LocalSandbox } from '@sbx/local';

function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

/** Lateness (ms) of a 20 ms interval timer while `work` runs. */
async function timerLateness(work) {
  const samples = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    samples.push(Math.max(0, now - last - 20));
    last = now;
  }, 20);
  await work();
  clearInterval(timer);
  return samples;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** p99 event-loop delay during normal and hostile greps, against the same timer when idle. */
export async function loopDelayRows(tree, needle) {
  const sandbox = new LocalSandbox('bench-loop', {
    mappings: [pathMapping('/mnt/data', tree)],
    searchTimeoutSeconds: 2,
  });
  const hostileDir = path.join(os.tmpdir(), 'sbx-bench-hostile');
  await mkdir(hostileDir, { recursive: true });
  await writeFile(path.join(hostileDir, 'a.txt'), `${'a'.repeat(28)}!\n`);
  const hostile = new LocalSandbox('bench-hostile', {
    mappings: [pathMapping('/mnt/h', hostileDir)],
    searchTimeoutSeconds: 2,
  });
  const idle = await timerLateness(() => sleep(2_000));
  const searching = await timerLateness(async () => {
    for (let i = 0; i < 5; i++) await sandbox.grep('/mnt/data', needle, { maxResults: 100_000 });
    for (let i = 0; i < 5; i++) await sandbox.glob('/mnt/data', '*.ts', { maxResults: 100_000 });
  });
  const attacked = await timerLateness(() =>
    hostile.grep('/mnt/h', '(a+)+$').catch((err) => {
      if (err.code !== 'SEARCH_TIMEOUT') throw err;
    }),
  );
  return [
    {
      name: 'p99 delay of a 20 ms timer during grep + glob of the tree',
      ours: percentile(searching, 99),
      baselineName: 'same timer, idle process',
      baseline: percentile(idle, 99),
      note: `max ${percentile(searching, 100).toFixed(1)} ms over ${searching.length} ticks (goal: p99 <= 20 ms)`,
    },
    {
      name: 'p99 delay of a 20 ms timer during a catastrophic grep ((a+)+$, 2 s limit)',
      ours: percentile(attacked, 99),
      baselineName: 'same timer, idle process',
      baseline: percentile(idle, 99),
      note: `max ${percentile(attacked, 100).toFixed(1)} ms over ${attacked.length} ticks; the search stops at its limit`,
    },
  ];
}

const BIG_FILE_BYTES = 400 * 1024 * 1024;

async function ensureBigFile(file) {
  try {
    if ((await stat(file)).size >= BIG_FILE_BYTES) return;
  } catch {
    // not there yet
  }
  await mkdir(path.dirname(file), { recursive: true });
  const out = createWriteStream(file);
  const chunk = `${'log line with some text in it '.repeat(3)}\n`.repeat(10_000);
  for (let written = 0; written < BIG_FILE_BYTES; written += chunk.length) {
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** Memory growth of reading lines 1-3 of a 400 MB file (plus its read-before-write mark). */
export async function rangedReadRows() {
  const dir = path.join(os.tmpdir(), 'sbx-bench-bigfile');
  const file = path.join(dir, 'big.log');
  await ensureBigFile(file);
  const sandbox = new LocalSandbox('bench-big', { mappings: [pathMapping('/mnt/big', dir)] });
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 2);
  const t0 = performance.now();
  const text = await sandbox.readFile('/mnt/big/big.log', { startLine: 1, endLine: 3 });
  await sandbox.fileFingerprint('/mnt/big/big.log');
  const ms = performance.now() - t0;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  if (text.split('\n').length !== 3) throw new Error('ranged read returned the wrong lines');
  const growthMb = (peak - before) / 2 ** 20;
  return [
    {
      name: 'read_file lines 1-3 of a 400 MB file + read-before-write mark',
      ours: ms,
      baselineName: '(memory, not time)',
      baseline: ms,
      note: `RSS growth ${growthMb.toFixed(1)} MB (goal <= 50 MB)`,
    },
  ];
}
