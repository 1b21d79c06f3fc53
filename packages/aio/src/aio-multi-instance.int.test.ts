import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AIO_STANDIN_IMAGE, removeByPrefix, runPrefix } from './docker-test-support.js';
import {
  WorkerInstance,
  buildWorker,
  dockerAndPrivateRedis,
} from './testing/multi-instance-support.js';
import type { WorkerError } from './testing/multi-instance-support.js';

// Several gateway instances, each a separate Node process running the provider as a host would
// load it, sharing one Docker engine (host-network stand-in containers) and one Redis ownership
// store. The Redis is private to this file: a test flushes it.
const { docker, redis } = await dockerAndPrivateRedis('the multi-instance tests');

const RENEWAL_SECONDS = 1;
const TTL_MS = 2_000; // renewal 1 s × 2
const T = (threadId: string) => ({ userId: 'u1', threadId });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Snapshot {
  active: string[];
  warm: string[];
}
interface ReconcileSummary {
  adopted: string[];
  deferred: string[];
  skipped: string[];
}

describe.skipIf(!redis)('AioSandboxProvider across processes (Docker + Redis)', () => {
  let worker: { file: string; dispose(): Promise<void> };
  let baseDir: string;
  let prefix: string;
  let keyPrefix: string;
  const live: WorkerInstance[] = [];

  beforeAll(async () => {
    worker = await buildWorker();
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-aio-mi-'));
  }, 120_000);

  afterAll(async () => {
    await worker?.dispose();
    await redis?.stop();
    if (baseDir) await rm(baseDir, { recursive: true, force: true });
  });

  afterEach(async () => {
    await Promise.all(live.splice(0).map((w) => w.stop()));
    await removeByPrefix(docker!, prefix);
  }, 90_000);

  async function start(count: number, extra: Record<string, unknown> = {}) {
    prefix = runPrefix('mi');
    keyPrefix = `sbxmi-${randomBytes(4).toString('hex')}`;
    const basePort = 20000 + Math.floor(Math.random() * 15000);
    const instances = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        WorkerInstance.start(worker.file, {
          use: '@sbx/aio',
          image: AIO_STANDIN_IMAGE,
          container_prefix: prefix,
          // Disjoint port ranges: the instances share the host network.
          port: basePort + i * 200,
          base_dir: baseDir,
          idle_timeout: 0,
          ownership: {
            type: 'redis',
            redis_url: redis!.url,
            renewal_interval_seconds: RENEWAL_SECONDS,
            ttl_multiplier: 2,
            key_prefix: keyPrefix,
          },
          warm_pool: { idle_check_interval_seconds: 3600 },
          aio: { network: 'host', reconcile_interval_seconds: 3600, stop_grace_seconds: 15 },
          ...extra,
        }),
      ),
    );
    live.push(...instances);
    const owners = await Promise.all(instances.map((w) => w.call<string>('ownerId')));
    return { instances, owners };
  }

  const lease = (id: string) => redis!.command('GET', `${keyPrefix}:sandbox:owner:${id}`);

  async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(100);
    }
  }

  async function labelled(): Promise<string[]> {
    const all = await docker!.listContainers({
      all: true,
      filters: { label: ['sbx.managed=true'], name: [`${prefix}-`] },
    });
    return all.flatMap((c) => c.Names ?? []).filter((n) => n.startsWith(`/${prefix}-`));
  }

  async function containersLeft(): Promise<string[]> {
    // Stopped containers are auto-removed a moment after their stop returned.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const names = await labelled();
      if (names.length === 0 || Date.now() > deadline) return names;
      await sleep(100);
    }
  }

  it('turns land on different instances for the same thread: take transfers ownership', async () => {
    const {
      instances: [a, b],
      owners: [ownerA, ownerB],
    } = await start(2);
    const id = await a!.call<string>('acquire', T('moving'));
    // A marker outside the bind mounts: only the same container has it.
    await a!.call('exec', { sandboxId: id, command: 'echo turn-1 > /tmp/sbx-marker' });
    await a!.call('release', { sandboxId: id });
    expect(await lease(id)).toBe(`own:${ownerA}`);

    expect(await b!.call('acquire', T('moving'))).toBe(id); // discovered on B
    expect(await b!.call('exec', { sandboxId: id, command: 'cat /tmp/sbx-marker' })).toContain(
      'turn-1',
    );
    expect(await lease(id)).toBe(`own:${ownerB}`);
    // A's stale warm entry is forgotten on its next renewal; the container keeps running.
    await a!.call('renew');
    expect((await a!.call<Snapshot>('snapshot')).warm).toEqual([]);
    expect(await b!.call('exec', { sandboxId: id, command: 'echo still-up' })).toContain(
      'still-up',
    );
    // And back to A for the third turn.
    await b!.call('release', { sandboxId: id });
    expect(await a!.call('acquire', T('moving'))).toBe(id);
    expect(await a!.call('exec', { sandboxId: id, command: 'cat /tmp/sbx-marker' })).toContain(
      'turn-1',
    );
    expect(await lease(id)).toBe(`own:${ownerA}`);
  }, 60_000);

  it('a crashed instance’s containers are adopted after one grace, not before', async () => {
    const {
      instances: [a, b],
      owners: [, ownerB],
    } = await start(2);
    const id = await a!.call<string>('acquire', T('crash'));
    await a!.kill();
    // The crashed owner's lease is still live: not adoptable.
    expect((await b!.call<ReconcileSummary>('reconcile')).deferred).toContain(id);
    await until('the crashed owner’s lease to lapse', async () =>
      (await lease(id)) === null ? true : undefined,
    );
    const firstUnowned = Date.now();
    expect((await b!.call<ReconcileSummary>('reconcile')).adopted).toEqual([]); // grace starts
    await sleep(TTL_MS / 2);
    expect((await b!.call<ReconcileSummary>('reconcile')).adopted).toEqual([]); // half-way
    const adoptedAt = await until('adoption', async () =>
      (await b!.call<ReconcileSummary>('reconcile')).adopted.includes(id) ? Date.now() : undefined,
    );
    expect(adoptedAt - firstUnowned).toBeGreaterThanOrEqual(TTL_MS);
    expect(await lease(id)).toBe(`own:${ownerB}`);
    expect((await b!.call<Snapshot>('snapshot')).warm).toEqual([id]);
    // The thread's next turn on B reclaims the adopted container.
    expect(await b!.call('acquire', T('crash'))).toBe(id);
    expect(await b!.call('exec', { sandboxId: id, command: 'echo adopted' })).toContain('adopted');
  }, 60_000);

  it('a background process outlives a crashed instance: the adopting one reaches it by its id', async () => {
    const {
      instances: [a, b],
    } = await start(2);
    const id = await a!.call<string>('acquire', T('server'));
    const command = 'echo up; while read l; do echo "got:$l"; done';
    const pid = await a!.call<string>('startProcess', { sandboxId: id, command });
    await a!.kill();
    await until('the crashed owner’s lease to lapse', async () =>
      (await lease(id)) === null ? true : undefined,
    );
    await until('adoption', async () =>
      (await b!.call<ReconcileSummary>('reconcile')).adopted.includes(id) ? true : undefined,
    );
    expect(await b!.call('acquire', T('server'))).toBe(id);

    // B's client of the container is new; the process id A handed out still names the process,
    // and what it printed before is replayed from the image.
    type Output = { command: string; text: string; status: string };
    const first = await b!.call<Output>('processOutput', { sandboxId: id, processId: pid });
    expect(first).toMatchObject({ command, status: 'running' });
    expect(first.text).toContain('up');
    expect(await b!.call('processWrite', { sandboxId: id, processId: pid, input: 'ping\n' })).toBe(
      true,
    );
    await until('the answer to reach B', async () =>
      (await b!.call<Output>('processOutput', { sandboxId: id, processId: pid })).text.includes(
        'got:ping',
      )
        ? true
        : undefined,
    );
    expect(await b!.call('processKill', { sandboxId: id, processId: pid })).toMatchObject({
      exitCode: null,
    });
  }, 60_000);

  it('FLUSHALL mid-run drops no live sandbox on any instance', async () => {
    const {
      instances: [a, b, c],
      owners,
    } = await start(3);
    const ia = await a!.call<string>('acquire', T('flush-a'));
    const ib = await b!.call<string>('acquire', T('flush-b'));
    await b!.call('release', { sandboxId: ib }); // warm on B
    const ic = await c!.call<string>('acquire', T('flush-c'));
    const ids = [ia, ib, ic];

    expect(await redis!.command('FLUSHALL')).toBe('OK');
    // Every instance reconciles right away: all three containers look unowned, none is adopted.
    for (const w of [a!, b!, c!]) {
      expect((await w.call<ReconcileSummary>('reconcile')).adopted).toEqual([]);
    }
    // Each owner's next renewal re-establishes its own lease.
    for (const [i, id] of ids.entries()) {
      await until(`lease of ${id} re-established`, async () =>
        (await lease(id)) === `own:${owners[i]}` ? true : undefined,
      );
    }
    for (const w of [a!, b!, c!]) {
      expect((await w.call<ReconcileSummary>('reconcile')).adopted).toEqual([]);
    }
    expect(await a!.call<Snapshot>('snapshot')).toMatchObject({ active: [ia], warm: [] });
    expect(await b!.call<Snapshot>('snapshot')).toMatchObject({ active: [], warm: [ib] });
    expect(await c!.call<Snapshot>('snapshot')).toMatchObject({ active: [ic], warm: [] });
    expect(await a!.call('exec', { sandboxId: ia, command: 'echo alive-a' })).toContain('alive-a');
    expect(await c!.call('exec', { sandboxId: ic, command: 'echo alive-c' })).toContain('alive-c');
    expect(await b!.call('acquire', T('flush-b'))).toBe(ib);
  }, 60_000);

  it('a stop slower than the lease TTL never lets a peer take the container mid-stop', async () => {
    const {
      instances: [a, b],
      owners: [ownerA],
    } = await start(2, { environment: { SBX_AIO_STANDIN_STOP_DELAY_MS: '8000' } });
    const id = await a!.call<string>('acquire', T('slow-stop'));
    const name = `${prefix}-${id}`;
    // The container A stops, by id: a later container of the same name is another one.
    const originalId = (await docker!.getContainer(name).inspect()).Id;
    const stopping = docker!.getContainer(originalId);
    const destroying = a!.call('destroy', { sandboxId: id });
    let done = false;
    void destroying.then(
      () => (done = true),
      () => (done = true),
    );
    await until('the teardown marker', async () =>
      (await lease(id)) === `del:${ownerA}` ? true : undefined,
    );
    const markedAt = Date.now();
    const marker = `del:${ownerA}`;
    // Attempts made while A's marker held from before to after them and the stopped container was
    // still running: the peer must be refused for the marker. Judged by what was observed around
    // each attempt, never by elapsed time, so a slow machine only makes fewer attempts count.
    let midStopRefusals = 0;
    let handedOutAtTheEnd = false;
    while (!done) {
      const markerBefore = await lease(id);
      const runningBefore = await stopping.inspect().then(
        (info) => info.State.Running,
        () => false,
      );
      const attempt = await b!.call('acquire', T('slow-stop')).then(
        (value) => ({ value }),
        (err: WorkerError) => ({ err }),
      );
      const markerAfter = await lease(id);
      if ('value' in attempt) {
        // A hand-out is legitimate only once A's stop is over (A releases the marker just before
        // its reply, so B may win the race against that reply): the container B got is a new one,
        // and whatever B got survives A's stop.
        await destroying;
        expect((await docker!.getContainer(name).inspect()).Id).not.toBe(originalId);
        expect(await b!.call('exec', { sandboxId: id, command: 'echo alive' })).toContain('alive');
        handedOutAtTheEnd = true;
        break;
      }
      // Past one TTL the marker must still be what refuses the peer; near the end of the stop a
      // create may instead collide with the name of the exiting container.
      const heldThroughout = markerBefore === marker && markerAfter === marker;
      // Once the container has exited (its removal still pending) a create may meet its name.
      if (heldThroughout && runningBefore && Date.now() - markedAt > TTL_MS + 500) {
        expect(attempt.err.code).toBe('SANDBOX_BEING_DESTROYED');
        midStopRefusals += 1;
      }
      await sleep(250);
    }
    await destroying;
    // The stop really outlasted the TTL, and the marker held past it.
    expect(midStopRefusals).toBeGreaterThan(0);
    if (!handedOutAtTheEnd) expect(await lease(id)).toBeNull();
    // Once the stop is over the thread cold-starts on B (or already did, racing A's reply).
    expect(await b!.call('acquire', T('slow-stop'))).toBe(id);
    expect(await b!.call('exec', { sandboxId: id, command: 'echo fresh' })).toContain('fresh');
  }, 60_000);

  it('after shutdown() of all instances, zero labelled containers remain', async () => {
    const {
      instances: [a, b, c],
    } = await start(3);
    const one = await a!.call<string>('acquire', T('end-1'));
    await a!.call('acquire', T('end-2'));
    await a!.call('release', { sandboxId: one });
    await b!.call('acquire', T('end-1')); // moved to B; A still holds a stale warm entry
    const three = await c!.call<string>('acquire', T('end-3'));
    await c!.call('release', { sandboxId: three });
    await b!.call('acquire', T('end-4'));
    expect(await labelled()).toHaveLength(4);
    await Promise.all([a!.stop(), b!.stop(), c!.stop()]);
    expect(await containersLeft()).toEqual([]);
  }, 90_000);
});
