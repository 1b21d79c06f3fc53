// Confined commands (isolation bwrap) against unconfined ones and a bare bubblewrap, same run:
// - exec('true') per call (p50, p95): confined, unconfined (host bash), and a bare
//   `bwrap --unshare-all … true` spawned directly — the floor any bubblewrap confinement pays;
// - a thread's first command: acquire + the namespace's set-up + `true`, on fresh threads;
// - streaming throughput: N MB through `onStdout`, confined vs unconfined.
// Samples alternate between the variants, so load on the machine hits them alike.
// Writes <repo>/bench/results/local-confinement.{json,md}. Needs built packages (or run with
// `node --conditions=@sbx/source --import tsx`).
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { LocalSandboxProvider, probeConfinement } from '@sbx/local';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const CALLS = Number(process.env.SBX_BENCH_EXEC_CALLS ?? 100);
const FIRST = Number(process.env.SBX_BENCH_FIRST_COMMANDS ?? 20);
const MEGABYTES = Number(process.env.SBX_BENCH_STREAM_MB ?? 100);
const ROUNDS = Number(process.env.SBX_BENCH_STREAM_ROUNDS ?? 3);

const sorted = (values) => [...values].sort((a, b) => a - b);
const median = (values) => sorted(values)[Math.floor(values.length / 2)];
const p95 = (values) =>
  sorted(values)[Math.min(values.length - 1, Math.floor(0.95 * values.length))];
const round = (n, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

const owner = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
const probe = probeConfinement(owner);
if (!probe.ok) {
  console.error(`confinement benchmark skipped: ${probe.cause}; fix: ${probe.fix}`);
  process.exit(0);
}

/** Merged-/usr or not, the bare run binds what a program needs to start. */
function systemArgs() {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const dir of ['/bin', '/sbin', '/lib', '/lib64']) args.push('--ro-bind-try', dir, dir);
  return args;
}

function bareBwrap() {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(
      probe.bwrap,
      [
        '--unshare-all',
        '--die-with-parent',
        ...systemArgs(),
        '--proc',
        '/proc',
        '--',
        '/usr/bin/true',
      ],
      { stdio: 'ignore', ...(owner ?? {}) },
    );
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`bwrap exited ${code}`)),
    );
  });
}

async function timed(fn) {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function streamed(sandbox) {
  let bytes = 0;
  const t0 = performance.now();
  const r = await sandbox.exec(`head -c ${MEGABYTES * 1024 * 1024} /dev/zero`, {
    onStdout: (chunk) => {
      bytes += chunk.length;
    },
  });
  const ms = performance.now() - t0;
  if (r.exitCode !== 0) throw new Error(`streaming failed: ${r.stderr}`);
  return { ms, bytes };
}

const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-bench-confinement-'));
const logger = { debug() {}, info() {}, warn() {}, error: console.error };
const confinedProvider = new LocalSandboxProvider({ baseDir, isolation: 'bwrap', logger });
const hostProvider = new LocalSandboxProvider({
  baseDir,
  isolation: 'none',
  allowHostBash: true,
  logger,
});
const confined = confinedProvider.get(
  await confinedProvider.acquire({ userId: 'bench', threadId: 'confined' }),
);
const host = hostProvider.get(await hostProvider.acquire({ userId: 'bench', threadId: 'host' }));

// Warm-up: the namespace exists, the shells and bwrap are in the page cache.
for (let i = 0; i < 5; i++) {
  await confined.exec('true');
  await host.exec('true');
  await bareBwrap();
}

const samples = { confined: [], host: [], bare: [] };
for (let i = 0; i < CALLS; i++) {
  samples.confined.push(await timed(() => confined.exec('true')));
  samples.host.push(await timed(() => host.exec('true')));
  samples.bare.push(await bareBwrap());
}

const first = [];
for (let i = 0; i < FIRST; i++) {
  const t0 = performance.now();
  const id = await confinedProvider.acquire({ userId: 'bench', threadId: `first-${i}` });
  await confinedProvider.get(id).exec('true');
  first.push(performance.now() - t0);
  await confinedProvider.release(id);
}

const stream = { confined: [], host: [] };
for (let i = 0; i < ROUNDS; i++) {
  stream.confined.push(await streamed(confined));
  stream.host.push(await streamed(host));
}
const throughput = (runs) => median(runs.map((r) => r.bytes / 1024 / 1024 / (r.ms / 1000)));

await confinedProvider.shutdown();
await hostProvider.shutdown();
await rm(baseDir, { recursive: true, force: true });

const execRow = (name, values, anchor) => ({
  benchmark: `exec('true'), per call`,
  variant: name,
  p50_ms: round(median(values)),
  p95_ms: round(p95(values)),
  ratio_to_bare_bwrap: round(median(values) / median(anchor)),
});
const rows = [
  execRow('confined (bwrap namespace per thread)', samples.confined, samples.bare),
  execRow('unconfined (host bash)', samples.host, samples.bare),
  execRow('bare bwrap --unshare-all true', samples.bare, samples.bare),
];
const firstRow = { p50_ms: round(median(first)), p95_ms: round(p95(first)), threads: FIRST };
const streamRow = {
  megabytes: MEGABYTES,
  confined_mb_s: round(throughput(stream.confined), 1),
  unconfined_mb_s: round(throughput(stream.host), 1),
  ratio: round(throughput(stream.confined) / throughput(stream.host)),
};
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${process.platform} ${os.release()}`;
const result = {
  package: '@sbx/local (confinement)',
  started: new Date().toISOString(),
  machine,
  calls: CALLS,
  exec: rows,
  firstCommand: firstRow,
  streaming: streamRow,
};

const md = [
  '# @sbx/local: confined commands',
  '',
  `${machine}. ${CALLS} calls per variant, alternating; a warm-up first.`,
  '',
  '| benchmark | variant | p50 (ms) | p95 (ms) | p50 / bare bwrap |',
  '| --- | --- | ---: | ---: | ---: |',
  ...rows.map(
    (r) =>
      `| ${r.benchmark} | ${r.variant} | ${r.p50_ms} | ${r.p95_ms} | ${r.ratio_to_bare_bwrap} |`,
  ),
  `| a thread's first command (acquire, namespace set-up, \`true\`) | confined | ${firstRow.p50_ms} | ${firstRow.p95_ms} | |`,
  '',
  `Streaming ${MEGABYTES} MB through onStdout (median of ${ROUNDS}): confined ${streamRow.confined_mb_s} MB/s, unconfined ${streamRow.unconfined_mb_s} MB/s (ratio ${streamRow.ratio}).`,
  '',
].join('\n');
const dir = path.join(repo, 'bench', 'results');
await mkdir(dir, { recursive: true });
await writeFile(path.join(dir, 'local-confinement.json'), `${JSON.stringify(result, null, 2)}\n`);
await writeFile(path.join(dir, 'local-confinement.md'), md);
process.stdout.write(md);
