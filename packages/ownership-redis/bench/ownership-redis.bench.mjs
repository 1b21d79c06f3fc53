// Throughput of RedisOwnershipStore take/claim/renew at concurrency 1 and 64, beside redis-benchmark
// running the same Lua script (EVALSHA) against the same private redis-server. The ratio
// ours/redis-benchmark shows what the client side (ioredis, argument handling, result mapping,
// the bounded-call wrapper) costs on top of the script itself.
//
//   npm run bench -w @sbx/ownership-redis        (builds first under nx; needs redis-server and
//                                                  redis-benchmark on PATH)
//
// Writes <repo>/bench/results/ownership-redis.json and .md.
import { execFile, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const { createRedisOwnershipStore, keyLayout, LUA_SCRIPTS } = await import('../dist/index.js');

const OPS_PER_RUN = Number(process.env.SBX_BENCH_OPS ?? 20_000);
const KEYSPACE = 1_000;
const CONCURRENCIES = [1, 64];
const ROUNDS = 3;
const OWNER = 'bench-host:0000';
const TTL_MS = 120_000;

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startRedis() {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 200; i++) {
    try {
      const { stdout } = await run('redis-cli', ['-p', String(port), 'PING']);
      if (stdout.trim() === 'PONG') return { port, child };
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  child.kill('SIGTERM');
  throw new Error('redis-server did not start');
}

async function cli(port, ...args) {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args]);
  return stdout.trim();
}

function median(runs, key) {
  return [...runs].sort((a, b) => key(a) - key(b))[Math.floor(runs.length / 2)];
}

/** ops/s of `op(i)` issued `total` times with `concurrency` calls in flight. */
async function measure(total, concurrency, op) {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        await op(i);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { opsPerSec: total / seconds, meanLatencyMs: (seconds * 1000 * concurrency) / total };
}

async function redisBenchmark(port, concurrency, total, args) {
  const { stdout } = await run(
    'redis-benchmark',
    [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-c',
      String(concurrency),
      '-n',
      String(total),
      '-r',
      String(KEYSPACE),
      '--csv',
      ...args,
    ],
    { maxBuffer: 1 << 20 },
  );
  const rows = stdout
    .trim()
    .split('\n')
    .filter((l) => l.trim() !== '');
  const last = rows[rows.length - 1].split('","').map((c) => c.replace(/"/g, ''));
  const rps = Number(last[1]);
  if (!Number.isFinite(rps)) throw new Error(`cannot parse redis-benchmark output: ${stdout}`);
  return rps;
}

const { port, child } = await startRedis();
const results = [];
try {
  const prefix = 'bench';
  const layout = keyLayout({ keyPrefix: prefix });
  const store = await createRedisOwnershipStore({
    url: `redis://127.0.0.1:${port}`,
    keyPrefix: prefix,
    ownerId: OWNER,
    ttlSeconds: TTL_MS / 1000,
  });
  const id = (i) => String(i % KEYSPACE);
  const ops = {
    take: (i) => store.take(id(i)),
    claim: (i) => store.claim(id(i)),
    renew: (i) => store.renew(id(i)),
  };
  const shas = {};
  for (const name of Object.keys(ops))
    shas[name] = await cli(port, 'SCRIPT', 'LOAD', LUA_SCRIPTS[name]);
  // Every key held by OWNER, so each operation runs its common success path (take/claim rewrite
  // our own lease, renew extends it) in both clients.
  const extra = {
    take: [OWNER, String(TTL_MS)],
    claim: [OWNER, String(TTL_MS), '0'],
    renew: [OWNER, String(TTL_MS)],
  };
  await measure(KEYSPACE * 2, 8, ops.take); // warm-up: connect, load scripts, populate keys

  for (const [name, op] of Object.entries(ops)) {
    for (const concurrency of CONCURRENCIES) {
      // Median of three alternating rounds: the host is shared, single runs are noisy.
      const oursRuns = [];
      const referenceRuns = [];
      for (let round = 0; round < ROUNDS; round++) {
        oursRuns.push(await measure(OPS_PER_RUN, concurrency, op));
        referenceRuns.push(
          await redisBenchmark(port, concurrency, OPS_PER_RUN, [
            'EVALSHA',
            shas[name],
            '1',
            layout.leaseKey('__rand_int__'),
            ...extra[name],
          ]),
        );
      }
      const ours = median(oursRuns, (r) => r.opsPerSec);
      const reference = median(referenceRuns, (r) => r);
      results.push({
        operation: name,
        concurrency,
        ops: OPS_PER_RUN,
        oursOpsPerSec: Math.round(ours.opsPerSec),
        oursMeanLatencyMs: Number(ours.meanLatencyMs.toFixed(3)),
        redisBenchmarkOpsPerSec: Math.round(reference),
        ratio: Number((ours.opsPerSec / reference).toFixed(3)),
        rounds: ROUNDS,
      });
      console.log(results.at(-1));
    }
  }
  await store.close();
} finally {
  child.kill('SIGTERM');
}

const meta = {
  date: new Date().toISOString(),
  node: process.version,
  redisServer: (await run('redis-server', ['--version'])).stdout.trim(),
  cpus: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown'}`,
  keyspace: KEYSPACE,
  note: 'ours: one RedisOwnershipStore (one connection) with N calls in flight; redis-benchmark: N connections, one EVALSHA in flight each, same script and arguments, same private server; median of 3 alternating rounds per cell.',
};
await mkdir(`${repoRoot}bench/results`, { recursive: true });
await writeFile(
  `${repoRoot}bench/results/ownership-redis.json`,
  `${JSON.stringify({ meta, results }, null, 2)}\n`,
);
const lines = [
  '# @sbx/ownership-redis benchmark',
  '',
  `${meta.date} — Node ${meta.node}, ${meta.redisServer.split(' ').slice(0, 3).join(' ')}, ${meta.cpus}`,
  '',
  meta.note,
  '',
  '| operation | concurrency | ours (ops/s) | ours mean latency (ms) | redis-benchmark EVALSHA (ops/s) | ours / redis-benchmark |',
  '| --- | ---: | ---: | ---: | ---: | ---: |',
  ...results.map(
    (r) =>
      `| ${r.operation} | ${r.concurrency} | ${r.oursOpsPerSec} | ${r.oursMeanLatencyMs} | ${r.redisBenchmarkOpsPerSec} | ${r.ratio} |`,
  ),
  '',
];
await writeFile(`${repoRoot}bench/results/ownership-redis.md`, lines.join('\n'));
console.log(`wrote ${repoRoot}bench/results/ownership-redis.{json,md}`);
