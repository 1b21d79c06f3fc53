import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AIO_STANDIN_IMAGE, removeByPrefix, runPrefix } from './docker-test-support.js';
import {
  WorkerInstance,
  buildWorker,
  dockerAndPrivateRedis,
} from './testing/multi-instance-support.js';
import type { WorkerError } from './testing/multi-instance-support.js';

// Chaos across gateway processes (real Docker, real Redis): three gateways serve a fixed set of
// threads while gateways are killed and replaced, paused past the lease TTL, and the store is
// flushed. Checked, and printed with the turns and faults:
//   1. no turn's command is cut short by a stop of its container, unless its own gateway was
//      killed or paused during the turn;
//   2. never two running containers for one thread;
//   3. nothing left running after every gateway shut down (the survivors first adopt what dead
//      gateways left, after one TTL and its grace);
//   4. every failed turn is a typed error (a code, not a bare Error) within its time bound.
// SBX_CHAOS_SECONDS sets the length (default 75; the test's budget grows with it).
// One schedule is also scripted, so it runs every time rather than once in many random runs: a
// warm holder paused past the TTL while a peer takes the thread for a turn, the store flushed
// before either renews, the stale holder resuming first (its renewal and warm reaper run while the
// peer is still stopped).
const { docker, redis } = await dockerAndPrivateRedis('the chaos test');

const SECONDS = Number(process.env.SBX_CHAOS_SECONDS ?? 75);
const GATEWAYS = 3;
const THREADS = ['c1', 'c2', 'c3', 'c4', 'c5'];
const RENEWAL_SECONDS = 1;
const TTL_MS = 2_000;
/** A turn (acquire, command, release) that takes longer has failed its bound. */
const TURN_BOUND_MS = 45_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Window {
  from: number;
  to: number;
}

/** One gateway slot: the process serving it now, and when it was not serving normally. */
interface Slot {
  worker: WorkerInstance;
  generation: number;
  disturbed: Window[];
  paused: boolean;
}

interface TurnRecord {
  thread: string;
  slot: number;
  generation: number;
  from: number;
  to: number;
  outcome: 'ok' | 'failed';
  detail?: string;
}

describe.skipIf(!redis)('chaos: gateways killed, paused and flushed (Docker + Redis)', () => {
  let worker: { file: string; dispose(): Promise<void> };
  let baseDir: string;
  const prefix = runPrefix('chaos');
  const keyPrefix = `sbxchaos-${randomBytes(4).toString('hex')}`;
  const basePort = 20000 + Math.floor(Math.random() * 15000);
  let portBlock = 0;

  beforeAll(async () => {
    worker = await buildWorker();
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-aio-chaos-'));
  }, 120_000);

  afterAll(async () => {
    await removeByPrefix(docker!, prefix);
    await worker?.dispose();
    await redis?.stop();
    if (baseDir) await rm(baseDir, { recursive: true, force: true });
  }, 120_000);

  function startGateway(): Promise<WorkerInstance> {
    // Disjoint port ranges: the gateways share the host network, replacements included.
    const port = basePort + 200 * portBlock++;
    return WorkerInstance.start(worker.file, {
      use: '@sbx/aio',
      image: AIO_STANDIN_IMAGE,
      container_prefix: prefix,
      port,
      base_dir: baseDir,
      idle_timeout: 0,
      replicas: 20,
      ownership: {
        type: 'redis',
        redis_url: redis!.url,
        renewal_interval_seconds: RENEWAL_SECONDS,
        ttl_multiplier: 2,
        key_prefix: keyPrefix,
      },
      warm_pool: { idle_check_interval_seconds: 3600 },
      aio: { network: 'host', reconciliation_interval_seconds: 2, stop_grace_seconds: 5 },
    });
  }

  async function runningByThread(): Promise<Map<string, string[]>> {
    const all = await docker!.listContainers({
      filters: { label: ['sbx.managed=true'], name: [`${prefix}-`], status: ['running'] },
    });
    const byId = new Map<string, string[]>();
    for (const c of all) {
      const name = (c.Names ?? [])[0]?.replace(/^\//, '') ?? '';
      if (!name.startsWith(`${prefix}-`)) continue;
      // Ids are derived from (user, thread): one id is one thread.
      const thread = c.Labels?.['sbx.sandbox-id'] ?? name;
      byId.set(thread, [...(byId.get(thread) ?? []), name]);
    }
    return byId;
  }

  /** Runs `work` with `gateway` stopped (SIGSTOP), so none of its timers fire meanwhile. */
  async function whileStopped<T>(gateway: WorkerInstance, work: () => Promise<T>): Promise<T> {
    gateway.child.kill('SIGSTOP');
    try {
      return await work();
    } finally {
      gateway.child.kill('SIGCONT');
    }
  }

  it('a stale warm holder after a flush: paused past the TTL while a peer took the thread, it neither wins the sandbox back nor stops it under the peer’s turn', async () => {
    const a = await startGateway();
    const b = await startGateway();
    try {
      const thread = { userId: 'u1', threadId: 'stale-holder' };
      // A serves a turn and parks the sandbox.
      const x = await a.call<string>('acquire', thread);
      await a.call('exec', { sandboxId: x, command: 'echo warm' });
      await a.call('release', { sandboxId: x });
      const turn = await whileStopped(a, async () => {
        // A is paused past the TTL, so it never reads LOST; B takes the thread for a turn.
        await sleep(TTL_MS + 1_000);
        expect(await b.call<string>('acquire', thread)).toBe(x);
        const running = b.call<string>('exec', {
          sandboxId: x,
          command: 'echo start; sleep 6; echo done',
        });
        await sleep(500);
        // B stalls too, so the store is flushed before either renews: both leases are gone.
        b.child.kill('SIGSTOP');
        await redis!.command('FLUSHALL');
        return { running }; // not awaited here: B is stopped
      });
      // A resumes first: its renewal finds the lease absent, its warm reaper runs.
      try {
        await a.call('renew');
        await a.call('evictWarm');
      } finally {
        b.child.kill('SIGCONT');
      }
      const output = await turn.running;
      expect(output).toContain('done');
      // B renewed its lease; A's next looks see it and forget the stale warm entry.
      await sleep(3 * RENEWAL_SECONDS * 1000);
      expect(await b.call<boolean>('has', { sandboxId: x })).toBe(true);
      const snapshot = await a.call<{ warm: string[] }>('snapshot');
      expect(snapshot.warm).not.toContain(x);
      expect([...(await runningByThread()).keys()]).toContain(x);
      await b.call('release', { sandboxId: x });
    } finally {
      a.child.kill('SIGCONT');
      b.child.kill('SIGCONT');
      await Promise.all([a.stop(), b.stop()]);
    }
  }, 120_000);

  it(
    'keeps every invariant while gateways die, stall and the store is flushed',
    async () => {
      const slots: Slot[] = [];
      for (let i = 0; i < GATEWAYS; i++) {
        slots.push({ worker: await startGateway(), generation: 0, disturbed: [], paused: false });
      }
      const turns: TurnRecord[] = [];
      const faults: string[] = [];
      const violations: string[] = [];
      const deadline = Date.now() + SECONDS * 1000;
      let turnCounter = 0;

      const turn = async (thread: string): Promise<void> => {
        const index = Math.floor(Math.random() * slots.length);
        const slot = slots[index]!;
        const { worker: gateway, generation } = slot;
        const n = ++turnCounter;
        const from = Date.now();
        const record: TurnRecord = {
          thread,
          slot: index,
          generation,
          from,
          to: from,
          outcome: 'ok',
        };
        try {
          const id = await gateway.call<string>('acquire', { userId: 'u1', threadId: thread });
          const output = await gateway.call<string>('exec', {
            sandboxId: id,
            command: `echo start-${n}; sleep 0.4; echo done-${n}`,
          });
          if (!output.includes(`done-${n}`)) {
            record.outcome = 'failed';
            record.detail = `CUT_SHORT: ${output.slice(0, 200)}`;
          }
          await gateway.call('release', { sandboxId: id });
        } catch (err) {
          record.outcome = 'failed';
          const code = (err as WorkerError).code;
          record.detail = `${code}: ${(err as Error).message.slice(0, 200)}`;
        }
        record.to = Date.now();
        turns.push(record);
      };

      const threadLoop = async (thread: string) => {
        while (Date.now() < deadline) {
          await turn(thread);
          await sleep(50 + Math.random() * 200);
        }
      };

      const faultLoop = async () => {
        // Every kind in turn, on random gateways at random moments.
        // pause-flush: the stale warm holder's schedule (paused past the TTL while peers take its
        // threads, the store flushed before it resumes).
        const kinds = ['kill', 'pause', 'flush', 'pause-flush'] as const;
        for (let round = 0; Date.now() < deadline - 8_000; round++) {
          await sleep(2_000 + Math.random() * 3_000);
          const kind = kinds[round % kinds.length]!;
          const index = Math.floor(Math.random() * slots.length);
          const slot = slots[index]!;
          if (kind === 'kill' && !slot.paused) {
            const at = Date.now();
            faults.push(`${((at - deadline) / 1000 + SECONDS).toFixed(1)}s kill gateway ${index}`);
            const dead = slot.worker;
            await dead.kill();
            const replacement = await startGateway();
            slot.disturbed.push({ from: at, to: Date.now() });
            slot.worker = replacement;
            slot.generation += 1;
          } else if ((kind === 'pause' || kind === 'pause-flush') && !slot.paused) {
            const at = Date.now();
            const ms = TTL_MS + 1_000 + Math.random() * 2_000;
            faults.push(
              `${((at - deadline) / 1000 + SECONDS).toFixed(1)}s ${kind} gateway ${index} for ${(ms / 1000).toFixed(1)}s`,
            );
            slot.paused = true;
            slot.worker.child.kill('SIGSTOP');
            await sleep(ms);
            if (kind === 'pause-flush') await redis!.command('FLUSHALL');
            slot.worker.child.kill('SIGCONT');
            slot.paused = false;
            slot.disturbed.push({ from: at, to: Date.now() + TTL_MS });
          } else if (kind === 'flush') {
            faults.push(`${((Date.now() - deadline) / 1000 + SECONDS).toFixed(1)}s FLUSHALL`);
            await redis!.command('FLUSHALL');
          }
        }
      };

      const sampler = async () => {
        while (Date.now() < deadline) {
          for (const [thread, names] of await runningByThread()) {
            if (names.length > 1)
              violations.push(`two running containers for ${thread}: ${names.join(', ')}`);
          }
          await sleep(1_000);
        }
      };

      await Promise.all([...THREADS.map(threadLoop), faultLoop(), sampler()]);

      for (const t of turns) {
        const slot = slots[t.slot]!;
        const disturbed = slot.disturbed.some((w) => w.from <= t.to && w.to >= t.from);
        if (t.to - t.from > TURN_BOUND_MS && !disturbed) {
          violations.push(`turn on gateway ${t.slot} for ${t.thread} took ${t.to - t.from} ms`);
        }
        if (t.outcome !== 'failed' || disturbed) continue;
        if (t.detail?.startsWith('CUT_SHORT')) {
          violations.push(
            `command cut short on a live gateway ${t.slot} (${t.thread}): ${t.detail}`,
          );
        } else if (t.detail?.startsWith('ERROR:')) {
          violations.push(`untyped failure on gateway ${t.slot} (${t.thread}): ${t.detail}`);
        }
      }

      // Every gateway alive again: the survivors adopt what dead ones left (one TTL and its grace),
      // then all shut down, and nothing may be left running.
      await sleep(3 * TTL_MS);
      for (const slot of slots) await slot.worker.call('reconcile').catch(() => undefined);
      await sleep(TTL_MS);
      for (const slot of slots) await slot.worker.call('reconcile').catch(() => undefined);
      // What each gateway tracked before it shut down, to explain a container left running.
      const views = await Promise.all(
        slots.map((s) =>
          s.worker.call<{ active: string[]; warm: string[] }>('snapshot').catch(() => undefined),
        ),
      );
      await Promise.all(slots.map((s) => s.worker.stop()));
      await sleep(TTL_MS);
      for (const [id, names] of await runningByThread()) {
        const lease = await redis!.command('GET', `${keyPrefix}:sandbox:owner:${id}`);
        const trackedBy = views.flatMap((v, i) =>
          v?.active.includes(id) ? [`${i} active`] : v?.warm.includes(id) ? [`${i} warm`] : [],
        );
        violations.push(
          `left running after shutdown: ${names.join(', ')} (lease ${String(lease)}, tracked by ${trackedBy.join(', ') || 'none'})`,
        );
      }

      const ok = turns.filter((t) => t.outcome === 'ok').length;
      const failed = turns.filter((t) => t.outcome === 'failed');
      console.log(
        [
          `chaos: ${turns.length} turns (${ok} ok, ${failed.length} failed) in ${SECONDS}s, ${faults.length} faults, ${violations.length} violations`,
          ...faults.map((f) => `  fault ${f}`),
          ...failed
            .slice(0, 20)
            .map((t) => `  failed turn (gateway ${t.slot}, ${t.thread}): ${t.detail}`),
          ...violations.map((v) => `  VIOLATION ${v}`),
        ].join('\n'),
      );
      expect(violations).toEqual([]);
      expect(ok).toBeGreaterThan(turns.length / 2);
    },
    (SECONDS + 150) * 1000,
  );
});
