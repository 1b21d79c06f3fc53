// Workspace checkpoints (@sbx/core writeCheckpoint/readCheckpoint, what `sbx snapshot export` and
// `import` and the local provider's snapshot/fork run) against system `tar czf` / `tar xzf` on the
// same tree, in the same run. Rounds alternate between sbx and tar, so load hits both alike.
// The tree: SBX_BENCH_CHECKPOINT_FILES small text-like files in nested directories plus a few
// larger ones (about SBX_BENCH_CHECKPOINT_MB in all). Import is the untrusted-archive path: every
// entry checked, staged, verified against the manifest, renamed into place.
// Writes <repo>/bench/results/local-checkpoint.{json,md}. Needs built packages (or run with
// `node --conditions=@sbx/source --import tsx`).
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { readCheckpoint, writeCheckpoint } from '@sbx/core';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const FILES = Number(process.env.SBX_BENCH_CHECKPOINT_FILES ?? 2000);
const MB = Number(process.env.SBX_BENCH_CHECKPOINT_MB ?? 64);
const ROUNDS = Number(process.env.SBX_BENCH_CHECKPOINT_ROUNDS ?? 3);

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (n, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

function run(cmd, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd}: ${err}`))));
  });
}

/** Text-like content (compresses as source code does), deterministic per file. */
function content(seed, bytes) {
  const words = ['const', 'return', 'function', 'sandbox', 'thread', 'await', 'import', '{', '}'];
  let x = seed * 2654435761;
  const parts = [];
  let size = 0;
  while (size < bytes) {
    x = (x * 1103515245 + 12345) >>> 0;
    const w = `${words[x % words.length]}${x % 97} `;
    parts.push(w);
    size += w.length;
  }
  return parts.join('').slice(0, bytes);
}

async function makeTree(root) {
  const workspace = path.join(root, 'workspace');
  const bigCount = 4;
  const bigBytes = Math.floor((MB * 1024 * 1024) / 2 / bigCount);
  const smallBytes = Math.floor((MB * 1024 * 1024) / 2 / FILES);
  for (let i = 0; i < FILES; i += 1) {
    const dir = path.join(workspace, `src${i % 20}`, `mod${i % 7}`);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, `f${i}.ts`), content(i, smallBytes));
  }
  for (let i = 0; i < bigCount; i += 1) {
    await writeFile(path.join(workspace, `data${i}.log`), content(10_000 + i, bigBytes));
  }
  for (const d of ['uploads', 'outputs']) await mkdir(path.join(root, d), { recursive: true });
}

const root = await mkdtemp(path.join(os.tmpdir(), 'sbx-bench-checkpoint-'));
try {
  const tree = path.join(root, 'tree');
  await makeTree(tree);
  const sources = {
    workspace: path.join(tree, 'workspace'),
    uploads: path.join(tree, 'uploads'),
    outputs: path.join(tree, 'outputs'),
  };
  const times = { sbxExport: [], tarExport: [], sbxImport: [], tarImport: [] };
  let totalBytes = 0;
  let sbxArchive = 0;
  let tarArchive = 0;
  for (let r = 0; r < ROUNDS; r += 1) {
    const out = path.join(root, `r${r}`);
    await mkdir(out);
    const sbxFile = path.join(out, 'sbx.tar.gz');
    const tarFile = path.join(out, 'tar.tar.gz');
    let t = performance.now();
    const summary = await writeCheckpoint(sources, createWriteStream(sbxFile));
    times.sbxExport.push(performance.now() - t);
    totalBytes = summary.totalBytes;
    t = performance.now();
    await run('tar', ['czf', tarFile, '-C', tree, 'workspace', 'uploads', 'outputs']);
    times.tarExport.push(performance.now() - t);
    sbxArchive = (await stat(sbxFile)).size;
    tarArchive = (await stat(tarFile)).size;
    t = performance.now();
    await readCheckpoint(createReadStream(sbxFile), path.join(out, 'sbx-restored'));
    times.sbxImport.push(performance.now() - t);
    await mkdir(path.join(out, 'tar-restored'));
    t = performance.now();
    await run('tar', ['xzf', tarFile, '-C', path.join(out, 'tar-restored')]);
    times.tarImport.push(performance.now() - t);
    await rm(out, { recursive: true, force: true });
  }
  const mbps = (ms) => round(totalBytes / 1024 / 1024 / (ms / 1000), 1);
  const row = (benchmark, sbx, baseline, tar, archive, tarSize) => ({
    benchmark,
    sbx_ms: round(median(sbx), 1),
    baseline,
    baseline_ms: round(median(tar), 1),
    ratio: round(median(sbx) / median(tar), 2),
    note: `${mbps(median(sbx))} MB/s vs ${mbps(median(tar))} MB/s; ${FILES + 4} files, ${round(totalBytes / 1048576, 1)} MB; archive ${round(archive / 1048576, 1)} MB vs ${round(tarSize / 1048576, 1)} MB; median of ${ROUNDS}`,
  });
  const result = {
    package: '@sbx/local: checkpoint',
    started: new Date().toISOString(),
    machine: {
      platform: process.platform,
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
    },
    rows: [
      row('checkpoint export', times.sbxExport, 'tar czf', times.tarExport, sbxArchive, tarArchive),
      row(
        'checkpoint import (untrusted)',
        times.sbxImport,
        'tar xzf',
        times.tarImport,
        sbxArchive,
        tarArchive,
      ),
    ],
    samples: times,
  };
  const dir = path.join(repo, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'local-checkpoint.json'), `${JSON.stringify(result, null, 2)}\n`);
  const table = [
    '| benchmark | sbx (ms) | anchor | anchor (ms) | ratio | note |',
    '| --- | --- | --- | --- | --- | --- |',
    ...result.rows.map(
      (r) =>
        `| ${r.benchmark} | ${r.sbx_ms} | ${r.baseline} | ${r.baseline_ms} | ${r.ratio} | ${r.note} |`,
    ),
  ].join('\n');
  await writeFile(path.join(dir, 'local-checkpoint.md'), `${table}\n`);
  console.log(table);
} finally {
  await rm(root, { recursive: true, force: true });
}
