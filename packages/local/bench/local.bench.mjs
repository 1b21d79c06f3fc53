// Benchmarks of @sbx/local against the host tools it replaces. Needs built packages
// (`npm run build -w @sbx/core -w @sbx/local`; `npm run bench` at the root builds first).
// Writes <repo>/bench/results/local.{json,md}.
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { maskLocalPathsInOutput, pathMapping } from '@sbx/core';
import { LocalSandbox, LocalSandboxProvider, findShell } from '@sbx/local';
import { NEEDLE, ensureTree } from './generate-tree.mjs';
import { loopDelayRows, rangedReadRows } from './search-safety.bench.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const TREE = process.env.SBX_BENCH_TREE ?? path.join(os.tmpdir(), 'sbx-bench-tree');
const THREADS = Number(process.env.SBX_BENCH_THREADS ?? 100_000);
const log = (msg) => process.stderr.write(`${msg}\n`);

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
async function timeIt(fn, runs = 5) {
  await fn(); // warm-up: page cache, JIT
  const times = [];
  let last;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    last = await fn();
    times.push(performance.now() - t0);
  }
  return { ms: median(times), last };
}
function run(cmd, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}
const lines = (text) => text.split('\n').filter(Boolean).length;
const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const round = (n, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

const rows = [];
function row(name, ours, baselineName, baselineMs, note) {
  rows.push({
    benchmark: name,
    sbx_ms: round(ours),
    baseline: baselineName,
    baseline_ms: round(baselineMs),
    ratio: round(ours / baselineMs, 2),
    note,
  });
}

async function searchBenchmarks() {
  const tree = await ensureTree(TREE, log);
  const sandbox = new LocalSandbox('bench', { mappings: [pathMapping('/mnt/data', TREE)] });

  const ours = await timeIt(() => sandbox.grep('/mnt/data', NEEDLE, { maxResults: 100_000 }));
  const note = `${ours.last.matches.length} matches (node_modules/.git skipped)`;
  if (has('rg')) {
    const rg = await timeIt(() => run('rg', ['-n', '-i', NEEDLE, TREE]));
    row(
      'grep, whole tree',
      ours.ms,
      'rg -n -i (default filters)',
      rg.ms,
      `${note}; rg: ${lines(rg.last)}`,
    );
    const rgScoped = await timeIt(() =>
      run('rg', ['-n', '-i', '--glob', '!node_modules', NEEDLE, TREE]),
    );
    row(
      'grep, whole tree',
      ours.ms,
      'rg -n -i, node_modules excluded',
      rgScoped.ms,
      `rg: ${lines(rgScoped.last)}`,
    );
  }
  const grepAll = await timeIt(() => run('grep', ['-rni', NEEDLE, TREE]));
  row(
    'grep, whole tree',
    ours.ms,
    'grep -rni',
    grepAll.ms,
    `grep: ${lines(grepAll.last)} (reads ignored dirs)`,
  );
  const grepScoped = await timeIt(() =>
    run('grep', ['-rni', '--exclude-dir=node_modules', '--exclude-dir=.git', NEEDLE, TREE]),
  );
  row(
    'grep, whole tree',
    ours.ms,
    'grep -rni --exclude-dir (same scope)',
    grepScoped.ms,
    `grep: ${lines(grepScoped.last)}`,
  );

  const glob = await timeIt(() => sandbox.glob('/mnt/data', '*.ts', { maxResults: 100_000 }));
  const findAll = await timeIt(() => run('find', [TREE, '-name', '*.ts']));
  row(
    'glob *.ts',
    glob.ms,
    'find -name',
    findAll.ms,
    `${glob.last.paths.length} paths; find: ${lines(findAll.last)}`,
  );
  const findPruned = await timeIt(() =>
    run('find', [
      TREE,
      '(',
      '-name',
      'node_modules',
      '-o',
      '-name',
      '.git',
      ')',
      '-prune',
      '-o',
      '-name',
      '*.ts',
      '-print',
    ]),
  );
  row(
    'glob *.ts',
    glob.ms,
    'find -prune (same scope)',
    findPruned.ms,
    `find: ${lines(findPruned.last)}`,
  );
  return tree;
}

async function execBenchmark() {
  const shell = await findShell();
  const sandbox = new LocalSandbox('bench-exec', { allowHostBash: true });
  const N = 200;
  const ours = [];
  const raw = [];
  for (let i = 0; i < 10; i++) await sandbox.executeCommand('true');
  for (let i = 0; i < N; i++) {
    let t0 = performance.now();
    await sandbox.executeCommand('true');
    ours.push(performance.now() - t0);
    t0 = performance.now();
    await new Promise((resolve, reject) => {
      const child = spawn(shell, ['-c', 'true'], { stdio: ['ignore', 'pipe', 'pipe'] });
      child.on('error', reject);
      child.on('close', resolve);
    });
    raw.push(performance.now() - t0);
  }
  row(
    "executeCommand('true'), per call (p50)",
    median(ours),
    `child_process.spawn(${path.basename(shell)} -c true)`,
    median(raw),
    `p95 ${round(percentile(ours, 95))} vs ${round(percentile(raw, 95))} ms over ${N} calls`,
  );
}

async function maskingBenchmark() {
  const base = path.join(os.tmpdir(), 'sbx-bench-mask', 'users', 'u', 'threads', 't');
  const ud = path.join(base, 'user-data');
  const threadData = {
    workspacePath: path.join(ud, 'workspace'),
    uploadsPath: path.join(ud, 'uploads'),
    outputsPath: path.join(ud, 'outputs'),
    acpWorkspacePath: path.join(base, 'acp-workspace'),
  };
  for (const d of Object.values(threadData)) await mkdir(d, { recursive: true });
  const sandbox = new LocalSandbox('bench-mask', {
    mappings: [
      pathMapping('/mnt/user-data', ud),
      pathMapping('/mnt/user-data/workspace', threadData.workspacePath),
      pathMapping('/mnt/user-data/uploads', threadData.uploadsPath),
      pathMapping('/mnt/user-data/outputs', threadData.outputsPath),
      pathMapping('/mnt/acp-workspace', threadData.acpWorkspacePath),
    ],
  });
  const parts = [];
  let size = 0;
  for (let i = 0; size < 10 * 1024 * 1024; i++) {
    const line =
      i % 4 === 0
        ? `${threadData.workspacePath}/src/module_${i}.py:12: warning in ${threadData.outputsPath}/report_${i}.md`
        : `plain build output line ${i} without any host path, just text to scan through`;
    parts.push(line);
    size += line.length + 1;
  }
  const text = parts.join('\n');
  const mb = text.length / (1024 * 1024);
  const sandboxMask = await timeIt(() => sandbox.maskHostPaths(text));
  const toolMask = await timeIt(() => maskLocalPathsInOutput(text, { threadData }));
  const naive = await timeIt(async () => {
    // Baseline: one compiled regex per root, rebuilt per call, as a per-path regex approach does.
    let out = text;
    for (const [host, virt] of [
      [threadData.workspacePath, '/mnt/user-data/workspace'],
      [threadData.outputsPath, '/mnt/user-data/outputs'],
      [threadData.uploadsPath, '/mnt/user-data/uploads'],
      [threadData.acpWorkspacePath, '/mnt/acp-workspace'],
      [ud, '/mnt/user-data'],
    ]) {
      const re = new RegExp(
        `${host.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=/|$|[^\\w./-])(?:[/\\\\][^\\s"';&|<>()]*)?`,
        'g',
      );
      out = out.replace(re, (m) => virt + m.slice(host.length));
    }
    return out;
  });
  if (!sandboxMask.last.includes('/mnt/user-data/workspace/src/module_0.py')) {
    throw new Error('masking benchmark produced unexpected output');
  }
  row(
    'mask 10 MB output (sandbox masker)',
    sandboxMask.ms,
    'String.replace with per-root RegExp',
    naive.ms,
    `${round(mb / (sandboxMask.ms / 1000))} MB/s`,
  );
  row(
    'mask 10 MB output (maskLocalPathsInOutput)',
    toolMask.ms,
    'String.replace with per-root RegExp',
    naive.ms,
    `${round(mb / (toolMask.ms / 1000))} MB/s, incl. canonical spellings`,
  );
  await rm(path.join(os.tmpdir(), 'sbx-bench-mask'), { recursive: true, force: true });
}

async function rssBenchmark() {
  const baseDir = path.join(os.tmpdir(), 'sbx-bench-provider');
  await rm(baseDir, { recursive: true, force: true });
  const provider = new LocalSandboxProvider({ baseDir, allowHostBash: true });
  const gc = globalThis.gc ?? (() => {});
  const batch = 1000;
  const sample = async (n) => {
    gc();
    await new Promise((r) => setImmediate(r));
    gc();
    return {
      threads: n,
      rssMb: round(process.memoryUsage().rss / 2 ** 20),
      heapMb: round(process.memoryUsage().heapUsed / 2 ** 20),
    };
  };
  // Warm up code paths so the first sample is not dominated by lazy compilation.
  for (let i = 0; i < batch; i++)
    provider.get(await provider.acquire({ userId: 'bench', threadId: `warm${i}` }));
  await rm(path.join(baseDir, 'users', 'bench', 'threads'), { recursive: true, force: true });
  const samples = [await sample(0)];
  const t0 = performance.now();
  for (let start = 0; start < THREADS; start += batch) {
    for (let i = start; i < Math.min(THREADS, start + batch); i++) {
      const id = await provider.acquire({ userId: 'bench', threadId: `t${i}` });
      provider.get(id);
    }
    // Keep the disk bounded: thread directories of earlier batches are long evicted (LRU 256).
    if (start >= batch) {
      const old = start - batch;
      await Promise.all(
        Array.from({ length: batch }, (_, k) =>
          rm(path.join(baseDir, 'users', 'bench', 'threads', `t${old + k}`), {
            recursive: true,
            force: true,
          }),
        ),
      );
    }
    if ((start + batch) % (THREADS / 4) === 0 || start + batch === 10_000)
      samples.push(await sample(start + batch));
  }
  const elapsed = performance.now() - t0;
  const first = samples[0];
  const last = samples[samples.length - 1];
  await rm(baseDir, { recursive: true, force: true });
  return {
    threads: THREADS,
    cached: provider.cachedThreadCount,
    acquirePerSecond: round(THREADS / (elapsed / 1000)),
    rssGrowthMb: round(last.rssMb - first.rssMb),
    heapGrowthMb: round(last.heapMb - first.heapMb),
    samples,
    gcExposed: typeof globalThis.gc === 'function',
  };
}

function markdown(result) {
  const out = [];
  out.push('# @sbx/local benchmarks', '');
  out.push(
    `${result.machine.cpus} × ${result.machine.cpuModel}, ${result.machine.memGb} GB RAM, Node ${result.machine.node}, ${result.machine.platform}. ` +
      `Tree: ${result.tree.files} files, ~${Math.round(result.tree.approxBytes / 1e6)} MB (about two thirds in node_modules/ and .git/). ` +
      'Median of 5 runs after a warm-up (page cache hot). Ratio = sbx / baseline (lower is better for sbx).',
    '',
  );
  out.push('| benchmark | sbx (ms) | baseline | baseline (ms) | ratio | note |');
  out.push('| --- | ---: | --- | ---: | ---: | --- |');
  for (const r of result.rows) {
    out.push(
      `| ${r.benchmark} | ${r.sbx_ms} | ${r.baseline} | ${r.baseline_ms} | ${r.ratio} | ${r.note} |`,
    );
  }
  const m = result.memory;
  if (!m) return `${out.join('\n')}\n`;
  out.push(
    '',
    `Provider memory: ${m.threads.toLocaleString('en-US')} distinct threads acquired (and looked up) through one provider, ` +
      `LRU keeps ${m.cached}: RSS growth ${m.rssGrowthMb} MB, heap growth ${m.heapGrowthMb} MB ` +
      `(${m.acquirePerSecond} acquires/s, including creating each thread's directories and deleting those of evicted threads to bound the disk; gc exposed: ${m.gcExposed}).`,
    '',
  );
  out.push('| threads | RSS (MB) | heap (MB) |', '| ---: | ---: | ---: |');
  for (const s of m.samples) out.push(`| ${s.threads} | ${s.rssMb} | ${s.heapMb} |`);
  return `${out.join('\n')}\n`;
}

async function main() {
  const started = new Date().toISOString();
  log('search benchmarks...');
  const tree = await searchBenchmarks();
  log('event-loop delay and ranged-read memory...');
  for (const r of [...(await loopDelayRows(TREE, NEEDLE)), ...(await rangedReadRows())]) {
    row(r.name, r.ours, r.baselineName, r.baseline, r.note);
  }
  if (process.env.SBX_BENCH_ONLY === 'search') {
    const machine = {
      platform: `${process.platform} ${os.release()}`,
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      memGb: Math.round(os.totalmem() / 2 ** 30),
    };
    process.stdout.write(markdown({ rows, tree, machine, started }));
    return;
  }
  log('exec benchmark...');
  await execBenchmark();
  log('masking benchmark...');
  await maskingBenchmark();
  log(`provider memory benchmark (${THREADS} threads)...`);
  const memory = await rssBenchmark();
  const result = {
    package: '@sbx/local',
    started,
    machine: {
      platform: `${process.platform} ${os.release()}`,
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      memGb: Math.round(os.totalmem() / 2 ** 30),
    },
    tree: { root: TREE, ...tree },
    rows,
    memory,
  };
  const dir = path.join(repo, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'local.json'), `${JSON.stringify(result, null, 2)}\n`);
  await writeFile(path.join(dir, 'local.md'), markdown(result));
  process.stdout.write(markdown(result));
}

await main();
