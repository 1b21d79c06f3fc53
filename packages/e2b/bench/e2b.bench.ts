/**
 * E2BSandboxProvider acquire latency and capacity contention, without a network.
 *
 * 1. Through the real `e2b` SDK against the local stand-in (control plane + envd on 127.0.0.1, in
 *    this process), memory ownership store, no background work:
 *    - reuse: the thread's VM is active (liveness `true` + timeout refresh + ownership take);
 *    - warm reclaim: released and parked (connect + liveness + take + timeout + bootstrap);
 *    - cold create: discovery listing + create + take + bootstrap;
 *    and, side by side, the floors under them: the bare SDK doing only the remote work each path
 *    cannot avoid (`Sandbox.create` + the bootstrap command, `Sandbox.connect` + the bootstrap
 *    command, one `true` on a held handle). The overhead columns are each path minus its floor;
 *    the providers and the bare SDK take turns sample by sample, so both see the same load.
 *    With SBX_REDIS_URL set, the same three paths again with Redis leases and the deployment-wide
 *    capacity ledger.
 * 2. With the in-memory FakeE2BClient (commands still run in a real local bash):
 *    - overflow_policy wait: N concurrent acquires for distinct threads against `replicas: R`, each
 *      running one short command and releasing; total drain time and per-acquire time to grant;
 *    - overflow_policy reject: refusal latency for a new thread while R threads hold the pool.
 *
 * Run: `npm run bench -w @sbx/e2b`. Writes bench/results/e2b.{json,md}. Sample counts:
 * SBX_BENCH_REUSE, SBX_BENCH_RECLAIM, SBX_BENCH_COLD, SBX_BENCH_CONTENTION_ACQUIRES,
 * SBX_BENCH_CONTENTION_REPLICAS, SBX_BENCH_CONTENTION_ROUNDS, SBX_BENCH_REJECT.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MemoryOwnershipStore,
  SandboxCapacityExceededError,
  parseSandboxConfig,
  loadOptionalDependency,
} from '@sbx/core';
import type { Logger } from '@sbx/core';
import { Sandbox } from 'e2b';
import type * as IORedis from 'ioredis';
import {
  DEFAULT_E2B_HOME_DIR,
  DEFAULT_E2B_IDLE_TIMEOUT_SECONDS,
  DEFAULT_E2B_TEMPLATE,
  E2BSandboxProvider,
  bootstrapScript,
} from '../src/index.js';
import {
  nowMs as now,
  round2,
  summarize,
  timed,
  writeBenchResults,
  envCount,
} from '../../../tools/bench/bench-kit.js';
import type { LatencyRow as Row } from '../../../tools/bench/bench-kit.js';
import { E2BStandinServer, FakeE2BClient } from '../src/testing.js';

const N_REUSE = envCount('SBX_BENCH_REUSE', 200);
const N_RECLAIM = envCount('SBX_BENCH_RECLAIM', 40);
const N_COLD = envCount('SBX_BENCH_COLD', 20);
const N_CONTENDERS = envCount('SBX_BENCH_CONTENTION_ACQUIRES', 64);
const REPLICAS = envCount('SBX_BENCH_CONTENTION_REPLICAS', 8);
const ROUNDS = envCount('SBX_BENCH_CONTENTION_ROUNDS', 3);
const N_REJECT = envCount('SBX_BENCH_REJECT', 200);
const REDIS_URL = process.env.SBX_REDIS_URL;

const BOOTSTRAP = bootstrapScript(DEFAULT_E2B_HOME_DIR);
const IDLE_TIMEOUT_MS = DEFAULT_E2B_IDLE_TIMEOUT_SECONDS * 1000;

const logger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error: (m, f) => console.error(m, f ?? ''),
};

/**
 * One way of doing each path: a provider, or the bare SDK. `sample` returns the measured time, so
 * set-up work a sample needs (the release before a reclaim) stays outside it.
 */
interface Subject {
  readonly label: string;
  warmUp(): Promise<void>;
  cold(i: number): Promise<number>;
  reuse(): Promise<number>;
  reclaim(i: number): Promise<number>;
  close(): Promise<void>;
}

/** reuse / warm reclaim / cold create through a provider (cold creates seed the other paths). */
function providerSubject(provider: E2BSandboxProvider, label: string): Subject {
  const user = `bench-${randomBytes(3).toString('hex')}`;
  const ids: string[] = [];
  return {
    label,
    // Loads the SDK and opens the keep-alive connections every path then shares.
    warmUp: async () =>
      provider.release(await provider.acquire({ userId: user, threadId: 'warm-up' })),
    cold: async (i) => {
      const [ms, id] = await timed(() => provider.acquire({ userId: user, threadId: `cold-${i}` }));
      ids.push(id);
      return ms;
    },
    reuse: async () => {
      const [ms, id] = await timed(() => provider.acquire({ userId: user, threadId: 'cold-0' }));
      if (id !== ids[0]) throw new Error(`reuse handed out ${id}, expected ${ids[0]}`);
      return ms;
    },
    reclaim: async () => {
      await provider.release(ids[1]!);
      const [ms, id] = await timed(() => provider.acquire({ userId: user, threadId: 'cold-1' }));
      if (id !== ids[1]) throw new Error(`reclaim handed out ${id}, expected ${ids[1]}`);
      return ms;
    },
    close: () => provider.shutdown(),
  };
}

/** The same remote work with the bare SDK: what any caller of E2B pays at least. */
function sdkSubject(server: E2BStandinServer): Subject {
  const connection = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
  const metadata = { sbx_bench: 'floor' };
  const ids: string[] = [];
  let held: Sandbox | undefined;
  const create = async () => {
    const sbx = await Sandbox.create(DEFAULT_E2B_TEMPLATE, {
      ...connection,
      metadata,
      timeoutMs: IDLE_TIMEOUT_MS,
    });
    await sbx.commands.run(BOOTSTRAP, { timeoutMs: 60_000 });
    return sbx;
  };
  return {
    label: 'bare SDK',
    warmUp: async () => {
      held = await create();
    },
    cold: async () => {
      const [ms, sbx] = await timed(create);
      ids.push(sbx.sandboxId);
      return ms;
    },
    reuse: async () => (await timed(() => held!.commands.run('true', { timeoutMs: 10_000 })))[0],
    reclaim: async (i) => {
      const id = ids[i % ids.length]!;
      const [ms] = await timed(async () => {
        const sbx = await Sandbox.connect(id, { ...connection, timeoutMs: IDLE_TIMEOUT_MS });
        await sbx.commands.run(BOOTSTRAP, { timeoutMs: 60_000 });
      });
      return ms;
    },
    close: async () => {
      for (const id of [...(held ? [held.sandboxId] : []), ...ids]) {
        await Sandbox.kill(id, connection);
      }
    },
  };
}

const FLOOR_PATHS = {
  reuse: 'bare SDK: one `true` on a held sandbox',
  reclaim: 'bare SDK: Sandbox.connect + bootstrap command',
  cold: 'bare SDK: Sandbox.create + bootstrap command',
} as const;

/**
 * Every subject takes one sample in turn, starting one further along each round, so the provider
 * and its floor see the same machine load (this box is shared; phases run apart drift apart).
 */
async function interleaved(
  subjects: readonly Subject[],
  n: number,
  sample: (subject: Subject, i: number) => Promise<number>,
): Promise<number[][]> {
  const out = subjects.map((): number[] => []);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < subjects.length; k++) {
      const at = (i + k) % subjects.length;
      out[at]!.push(await sample(subjects[at]!, i));
    }
  }
  return out;
}

async function acquirePaths(subjects: readonly Subject[]): Promise<Row[]> {
  for (const subject of subjects) await subject.warmUp();
  const cold = await interleaved(subjects, N_COLD, (s, i) => s.cold(i));
  const reuse = await interleaved(subjects, N_REUSE, (s) => s.reuse());
  const reclaim = await interleaved(subjects, N_RECLAIM, (s, i) => s.reclaim(i));
  const rows: Row[] = [];
  const bare = subjects.findIndex((s) => s.label === 'bare SDK');
  subjects.forEach((subject, k) => {
    if (k === bare) return;
    const suffix = subject.label === '' ? '' : `, ${subject.label}`;
    rows.push(
      summarize(`reuse (active)${suffix}`, reuse[k]!),
      summarize(`warm reclaim${suffix}`, reclaim[k]!),
      summarize(`cold create${suffix}`, cold[k]!),
    );
  });
  rows.push(
    summarize(FLOOR_PATHS.reuse, reuse[bare]!),
    summarize(FLOOR_PATHS.reclaim, reclaim[bare]!),
    summarize(FLOOR_PATHS.cold, cold[bare]!),
  );
  return rows;
}

async function standinProvider(
  server: E2BStandinServer,
  baseDir: string,
  ownership: Record<string, unknown> | undefined,
): Promise<E2BSandboxProvider> {
  const memory = ownership === undefined;
  const provider = new E2BSandboxProvider({
    config: parseSandboxConfig(
      {
        use: '@sbx/e2b',
        base_dir: baseDir,
        replicas: N_COLD + 8,
        ...(memory ? {} : { ownership }),
        e2b: { api_key: server.apiKey, api_url: server.url, sandbox_url: server.url },
      },
      { env: {} },
    ),
    ...(memory ? { ownershipStore: new MemoryOwnershipStore(), capacityStore: null } : {}),
    background: false,
    logger,
    env: {},
  });
  await provider.ready();
  // A fresh ledger admits nothing before one complete inventory (fail-closed).
  if (!memory) await provider.reconcileNow();
  return provider;
}

function fakeProvider(
  fake: FakeE2BClient,
  baseDir: string,
  replicas: number,
  policy: 'wait' | 'reject',
): E2BSandboxProvider {
  return new E2BSandboxProvider({
    config: parseSandboxConfig(
      { use: '@sbx/e2b', base_dir: baseDir, replicas, overflow_policy: policy },
      { env: {} },
    ),
    client: fake,
    ownershipStore: new MemoryOwnershipStore(),
    capacityStore: null,
    background: false,
    logger,
    env: {},
  });
}

interface WaitRound {
  drainMs: number;
  grants: number[];
  peakActive: number;
}

/** N acquires at once for distinct threads; each runs one command and releases. */
async function waitRound(baseDir: string, round: number): Promise<WaitRound> {
  const fake = new FakeE2BClient();
  const provider = fakeProvider(fake, baseDir, REPLICAS, 'wait');
  let active = 0;
  let peakActive = 0;
  try {
    await provider.release(await provider.acquire({ userId: 'bench', threadId: 'warm-up' }));
    const start = now();
    const grants = await Promise.all(
      Array.from({ length: N_CONTENDERS }, async (_, i) => {
        const asked = now();
        const id = await provider.acquire({ userId: 'bench', threadId: `r${round}-t${i}` });
        const grant = now() - asked;
        active += 1;
        peakActive = Math.max(peakActive, active);
        const sandbox = provider.get(id);
        if (sandbox === undefined) throw new Error(`acquired ${id} is not active`);
        const out = await sandbox.executeCommand('echo ok');
        if (out.trim() !== 'ok') throw new Error(`unexpected command output: ${out}`);
        active -= 1;
        await provider.release(id);
        return grant;
      }),
    );
    const drainMs = now() - start;
    return { drainMs, grants, peakActive };
  } finally {
    await provider.shutdown();
    await fake.dispose();
  }
}

/** Sequential cold acquires with free capacity: the reference the waits are read against. */
async function uncontendedCreates(baseDir: string): Promise<number[]> {
  const fake = new FakeE2BClient();
  const provider = fakeProvider(fake, baseDir, N_COLD + 1, 'wait');
  try {
    await provider.release(await provider.acquire({ userId: 'bench', threadId: 'warm-up' }));
    const samples: number[] = [];
    for (let i = 0; i < N_COLD; i++) {
      const [ms] = await timed(() => provider.acquire({ userId: 'bench', threadId: `cold-${i}` }));
      samples.push(ms);
    }
    return samples;
  } finally {
    await provider.shutdown();
    await fake.dispose();
  }
}

/** Refusals for new threads while every slot is held by an active thread. */
async function refusals(baseDir: string): Promise<{ samples: number[]; listCalls: number }> {
  const fake = new FakeE2BClient();
  const provider = fakeProvider(fake, baseDir, REPLICAS, 'reject');
  try {
    for (let i = 0; i < REPLICAS; i++) {
      await provider.acquire({ userId: 'bench', threadId: `hold-${i}` });
    }
    const samples: number[] = [];
    const listsBefore = fake.callsOf('list').length;
    for (let i = 0; i < N_REJECT; i++) {
      const [ms, outcome] = await timed(() =>
        provider.acquire({ userId: 'bench', threadId: `over-${i}` }).then(
          (id) => ({ id }),
          (error: unknown) => ({ error }),
        ),
      );
      if (!('error' in outcome) || !(outcome.error instanceof SandboxCapacityExceededError)) {
        throw new Error(`expected a capacity refusal, got ${JSON.stringify(outcome)}`);
      }
      samples.push(ms);
    }
    return { samples, listCalls: fake.callsOf('list').length - listsBefore };
  } finally {
    await provider.shutdown();
    await fake.dispose();
  }
}

/** Removes what the Redis rows left (the ledger outlives the provider on purpose). */
async function dropKeys(url: string, prefix: string): Promise<void> {
  // Loaded at run time: the bundle keeps the ioredis install the rest of the workspace uses.
  const { Redis } = await loadOptionalDependency<typeof IORedis>('ioredis', '@sbx/e2b bench');
  const admin = new Redis(url);
  try {
    const keys = await admin.keys(`${prefix}:*`);
    if (keys.length > 0) await admin.del(...keys);
  } finally {
    await admin.quit();
  }
}

function overFloor(row: Row, floor: Row): { p50: number; p95: number } {
  return { p50: round2(row.p50Ms - floor.p50Ms), p95: round2(row.p95Ms - floor.p95Ms) };
}

async function main(): Promise<void> {
  const started = now();
  // The machine may be shared: the load at the start says how much the numbers can be trusted.
  const loadAtStart = loadavg()[0] ?? 0;
  const baseDir = await mkdtemp(join(tmpdir(), 'sbx-e2b-bench-'));
  const server = await new E2BStandinServer().start();
  const rows: Row[] = [];
  let redisNote: string;
  const redisPrefix = `sbxbench:e2b:${randomBytes(4).toString('hex')}`;
  const subjects: Subject[] = [];
  try {
    subjects.push(
      providerSubject(await standinProvider(server, join(baseDir, 'memory'), undefined), ''),
    );
    if (REDIS_URL) {
      const redis = await standinProvider(server, join(baseDir, 'redis'), {
        type: 'redis',
        redis_url: REDIS_URL,
        key_prefix: redisPrefix,
      });
      subjects.push(providerSubject(redis, 'Redis leases + ledger'));
      redisNote = `Redis rows: leases and the deployment-wide ledger on ${REDIS_URL}.`;
    } else {
      redisNote = 'Redis rows skipped: SBX_REDIS_URL is not set.';
      console.log(redisNote);
    }
    subjects.push(sdkSubject(server));
    rows.push(...(await acquirePaths(subjects)));
  } finally {
    for (const subject of subjects) await subject.close();
    if (REDIS_URL) await dropKeys(REDIS_URL, redisPrefix);
    await server.stop();
  }

  const waits: WaitRound[] = [];
  let uncontended: number[];
  let refused: { samples: number[]; listCalls: number };
  try {
    for (let r = 0; r < ROUNDS; r++) waits.push(await waitRound(join(baseDir, `wait-${r}`), r));
    uncontended = await uncontendedCreates(join(baseDir, 'uncontended'));
    refused = await refusals(join(baseDir, 'reject'));
  } finally {
    await rm(baseDir, { recursive: true, force: true });
  }

  const byPath = (p: string) => rows.find((r) => r.path === p)!;
  const floorOf: Record<string, string> = {
    'reuse (active)': FLOOR_PATHS.reuse,
    'warm reclaim': FLOOR_PATHS.reclaim,
    'cold create': FLOOR_PATHS.cold,
  };
  const floorFor = (path: string): Row | undefined => {
    const base = Object.keys(floorOf).find((k) => path === k || path.startsWith(`${k}, `));
    return base === undefined ? undefined : byPath(floorOf[base]!);
  };
  // Each path against the floor under it (the report's time-with-anchor shape).
  const paired = rows.flatMap((r) => {
    const floor = floorFor(r.path);
    if (floor === undefined) return [];
    const over = overFloor(r, floor);
    return [
      {
        benchmark: `${r.path}, p50`,
        sbx_ms: r.p50Ms,
        baseline: floor.path,
        baseline_ms: floor.p50Ms,
        ratio: Math.round((r.p50Ms / floor.p50Ms) * 100) / 100,
        p50OverFloorMs: over.p50,
        p95OverFloorMs: over.p95,
        note: `p95 ${r.p95Ms} vs ${floor.p95Ms} ms, n=${r.samples}; over the floor: p50 ${over.p50} ms, p95 ${over.p95} ms`,
      },
    ];
  });

  const peakActive = Math.max(...waits.map((w) => w.peakActive));
  if (peakActive > REPLICAS) {
    throw new Error(`${peakActive} sandboxes were active at once with replicas ${REPLICAS}`);
  }
  const grant = summarize(
    `wait: time to grant, ${N_CONTENDERS} at once, replicas ${REPLICAS}`,
    waits.flatMap((w) => w.grants),
  );
  const drain = summarize(
    `wait: drain of ${N_CONTENDERS} (per round)`,
    waits.map((w) => w.drainMs),
  );
  const reference = summarize('uncontended cold acquire (reference)', uncontended);
  const refusal = summarize(`reject: refusal, ${REPLICAS} of ${REPLICAS} held`, refused.samples);
  const capacityRows = [grant, drain, reference, refusal];
  const waitPolicy = {
    client: 'FakeE2BClient',
    acquires: N_CONTENDERS,
    replicas: REPLICAS,
    rounds: ROUNDS,
    peakActive,
    drainP50Ms: drain.p50Ms,
    drainMaxMs: drain.maxMs,
    grantP50Ms: grant.p50Ms,
    grantP95Ms: grant.p95Ms,
    grantMeanMs: grant.meanMs,
    grantMinMs: grant.minMs,
    grantMaxMs: grant.maxMs,
    uncontendedAcquireP50Ms: reference.p50Ms,
    uncontendedAcquireP95Ms: reference.p95Ms,
  };
  const rejectPolicy = {
    client: 'FakeE2BClient',
    replicas: REPLICAS,
    samples: refusal.samples,
    p50Ms: refusal.p50Ms,
    p95Ms: refusal.p95Ms,
    meanMs: refusal.meanMs,
    minMs: refusal.minMs,
    maxMs: refusal.maxMs,
    listCallsPerRefusal: round2(refused.listCalls / refused.samples.length),
  };

  const cpuList = cpus();
  const report = {
    benchmark: 'e2b',
    date: new Date().toISOString(),
    machine: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cpus: availableParallelism(),
      cpuModel: cpuList[0]?.model.trim() ?? '?',
      loadAverage1m: Math.round(loadAtStart * 100) / 100,
    },
    rows: paired,
    latency: rows,
    waitPolicy,
    rejectPolicy,
    durationMs: Math.round(now() - started),
  };

  const cellMs = (v: number | undefined) => (v === undefined ? '' : String(v));
  const latency = [
    '| path | n | p50 (ms) | p95 (ms) | mean (ms) | min (ms) | max (ms) | floor | p50 over floor (ms) | p95 over floor (ms) |',
    '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|',
    ...rows.map((r) => {
      const floor = floorFor(r.path);
      const over = floor === undefined ? undefined : overFloor(r, floor);
      return `| ${r.path} | ${r.samples} | ${r.p50Ms} | ${r.p95Ms} | ${r.meanMs} | ${r.minMs} | ${r.maxMs} | ${floor?.path ?? ''} | ${cellMs(over?.p50)} | ${cellMs(over?.p95)} |`;
    }),
  ].join('\n');
  const capacity = [
    '| scenario | n | p50 (ms) | p95 (ms) | mean (ms) | min (ms) | max (ms) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...capacityRows.map(
      (r) =>
        `| ${r.path} | ${r.samples} | ${r.p50Ms} | ${r.p95Ms} | ${r.meanMs} | ${r.minMs} | ${r.maxMs} |`,
    ),
  ].join('\n');
  const markdown = [
    '# @sbx/e2b provider acquire latency and capacity',
    '',
    `Node ${process.version}, ${report.machine.platform}, ${report.machine.cpus} CPUs (${report.machine.cpuModel}, 1-minute load ${report.machine.loadAverage1m} at the start), ${report.date}; ${(report.durationMs / 1000).toFixed(1)} s in all.`,
    '',
    '## Acquire paths through the real `e2b` SDK against the local stand-in',
    '',
    'Memory ownership store, no background work; the stand-in serves from the same process and runs each command in a local `bash`.',
    redisNote,
    '',
    latency,
    '',
    'Reuse = liveness `true` + timeout refresh + ownership take. Warm reclaim = connect + liveness + take + timeout refresh + bootstrap. Cold create = discovery listing + create + take + bootstrap (no mounts, no skills), three stand-in requests where the floor makes two. Each floor is the bare SDK doing only the remote work that path cannot avoid. The subjects take turns sample by sample, so a path and its floor see the same load.',
    '',
    `## Capacity with FakeE2BClient (${ROUNDS} rounds)`,
    '',
    `\`overflow_policy: wait\`: ${N_CONTENDERS} acquires for distinct threads at once against \`replicas: ${REPLICAS}\`; each runs \`echo ok\` and releases, and a waiter makes room by evicting the oldest warm VM. Time to grant = queueing + the create. Peak active: ${peakActive}. \`overflow_policy: reject\`: a new thread while ${REPLICAS} threads hold the pool (${rejectPolicy.listCallsPerRefusal} discovery listing per refusal).`,
    '',
    capacity,
    '',
  ].join('\n');

  await writeBenchResults('e2b', report, markdown);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
