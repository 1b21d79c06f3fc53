import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  SandboxBeingDestroyedError,
  SandboxCapacityExceededError,
  createCapacityStore,
  createOwnershipStore,
  parseSandboxConfig,
  resolveOwnershipConfig,
} from '@sbx/core';
import type { SandboxConfig } from '@sbx/core';
import { requireService } from '@sbx/core/testing';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { E2BSandboxProvider } from './e2b-sandbox-provider.js';
import { E2B_TAGS } from './metadata.js';
import { SdkE2BClient } from './sdk-client.js';
import { E2BStandinServer } from './testing/e2b-standin-server.js';

// Several gateways in one process, each an E2BSandboxProvider with its own Redis ownership store
// and ledger client (its own owner id), sharing the deployment's Redis key prefix and ONE E2B
// backend: the local stand-in, driven through the real `e2b` SDK. Everything is real except the
// cloud. Timers are off (`background: false`): renewal and reconciliation run when a test says
// so, and real time passes only where a Redis TTL must really expire.
const url = await requireService('redis');

const T = (threadId: string) => ({ userId: 'u1', threadId });

interface World {
  readonly standin: E2BStandinServer;
  readonly prefix: string;
}

interface Timing {
  /** `ownership.renewal_interval_seconds`; the lease TTL is this × `ttl_multiplier`. */
  renewal: number;
  multiplier: number;
}

const SHORT: Timing = { renewal: 0.5, multiplier: 2 };

describe.skipIf(!url)('E2B gateways sharing one E2B backend and one Redis', () => {
  let admin: Redis;
  let baseDir: string;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    admin = new Redis(url!);
    baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-gateways-'));
  });
  afterAll(async () => {
    await admin.quit();
    await rm(baseDir, { recursive: true, force: true });
  });
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  /** A fresh stand-in and a key prefix of its own; both are removed after the test. */
  async function world(): Promise<World> {
    const prefix = `sbxtest:e2b-gw:${process.pid}:${randomUUID().slice(0, 8)}`;
    cleanups.push(async () => {
      const keys = await admin.keys(`${prefix}:*`);
      if (keys.length) await admin.del(...keys);
    });
    const standin = await new E2BStandinServer().start();
    cleanups.push(() => standin.stop());
    return { standin, prefix };
  }

  function config(
    w: World,
    extra: Record<string, unknown> = {},
    timing: Timing = SHORT,
    e2b: Record<string, unknown> = {},
  ): SandboxConfig {
    return parseSandboxConfig({
      use: '@sbx/e2b',
      base_dir: baseDir,
      replicas: 3,
      overflow_policy: 'reject',
      ownership: {
        type: 'redis',
        redis_url: url,
        key_prefix: w.prefix,
        renewal_interval_seconds: timing.renewal,
        ttl_multiplier: timing.multiplier,
      },
      e2b: {
        api_key: w.standin.apiKey,
        api_url: w.standin.url,
        sandbox_url: w.standin.url,
        ...e2b,
      },
      ...extra,
    });
  }

  /** A gateway that builds its ownership store and ledger from the configuration. */
  function gateway(
    w: World,
    extra: Record<string, unknown> = {},
    timing: Timing = SHORT,
    e2b: Record<string, unknown> = {},
  ): E2BSandboxProvider {
    const provider = new E2BSandboxProvider({
      config: config(w, extra, timing, e2b),
      background: false,
      env: {},
    });
    cleanups.push(() => provider.shutdown());
    return provider;
  }

  /**
   * A gateway whose stores the test holds (built by core's factories from the same resolved
   * configuration the provider would use), so it can crash: its Redis clients close and it is
   * never shut down.
   */
  async function crashableGateway(
    w: World,
    extra: Record<string, unknown>,
    timing: Timing,
    e2b: Record<string, unknown>,
  ) {
    const cfg = config(w, extra, timing, e2b);
    const resolved = resolveOwnershipConfig(cfg, {});
    const ownership = await createOwnershipStore(resolved, { env: {} });
    const capacity = await createCapacityStore(resolved, {
      hardLimit: cfg.replicas ?? 3,
      env: {},
    });
    const provider = new E2BSandboxProvider({
      config: cfg,
      ownershipStore: ownership,
      capacityStore: capacity ?? null,
      background: false,
      env: {},
    });
    let crashed = false;
    cleanups.push(async () => {
      if (crashed) return;
      await provider.shutdown();
      await ownership.close();
      await capacity?.close();
    });
    return {
      provider,
      ownership,
      crash: async () => {
        crashed = true;
        await ownership.close();
        await capacity?.close();
      },
    };
  }

  const leaseKey = (w: World, id: string) => `${w.prefix}:sandbox:owner:${id}`;
  const lease = (w: World, id: string) => admin.get(leaseKey(w, id));
  const leaseKeys = (w: World) => admin.keys(`${w.prefix}:sandbox:owner:*`);
  const alive = (w: World) =>
    [...w.standin.vms.values()]
      .filter((vm) => vm.alive)
      .map((vm) => vm.sandboxId)
      .sort();
  const kills = (w: World) => w.standin.requests.filter((r) => r.method === 'DELETE').length;
  const creates = (w: World) =>
    w.standin.requests.filter((r) => r.method === 'POST' && r.path === '/v2/sandboxes').length;
  async function ledgerSlots(w: World): Promise<string[]> {
    const fields = await admin.hgetall(`${w.prefix}:e2b-capacity`);
    return Object.keys(fields)
      .filter((f) => f.startsWith('s:'))
      .map((f) => f.slice(2))
      .sort();
  }

  /** Polls `probe` until it returns a value; bounded, so a condition that never comes fails. */
  async function until<V>(what: string, probe: () => Promise<V | undefined>, ms = 8_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('a thread moves between gateways: B adopts the VM A parked, A forgets it on renewal, nothing is killed', async () => {
    const w = await world();
    const a = gateway(w);
    const b = gateway(w);
    // A fresh ledger admits nothing before one complete inventory.
    await a.reconcileNow();
    const [ownerA, ownerB] = await Promise.all([a.ownerId(), b.ownerId()]);

    const id = await a.acquire(T('moving'));
    expect(await a.get(id)!.executeCommand('echo turn-1 > /home/user/turn-marker && echo ok')).toBe(
      'ok\n',
    );
    await a.release(id);
    expect(a.warmIds()).toEqual([id]);
    expect(await lease(w, id)).toBe(`own:${ownerA}`);

    // The next turn lands on B: discovery finds the VM by its tags and takes the lease over.
    expect(await b.acquire(T('moving'))).toBe(id);
    expect(await lease(w, id)).toBe(`own:${ownerB}`);
    expect(await b.get(id)!.executeCommand('cat /home/user/turn-marker')).toBe('turn-1\n');
    expect(creates(w)).toBe(1);
    expect(await ledgerSlots(w)).toEqual([id]);

    // A still has its stale warm entry until its next renewal sees the lease lost.
    expect(a.warmIds()).toEqual([id]);
    await a.renewLeases();
    expect(a.warmIds()).toEqual([]);
    expect(a.ownsLease(id)).toBe(false);
    expect(a.capacitySnapshot().total).toBe(0);
    // Forgotten, not killed: B's turn goes on in the same VM.
    expect(await lease(w, id)).toBe(`own:${ownerB}`);
    expect(await b.get(id)!.executeCommand('echo still-up')).toBe('still-up\n');

    // And back to A for the third turn.
    await b.release(id);
    expect(await a.acquire(T('moving'))).toBe(id);
    expect(await lease(w, id)).toBe(`own:${ownerA}`);
    expect(await a.get(id)!.executeCommand('cat /home/user/turn-marker')).toBe('turn-1\n');
    await b.renewLeases();
    expect(b.warmIds()).toEqual([]);

    expect(kills(w)).toBe(0);
    expect(alive(w)).toEqual([id]);
    expect(creates(w)).toBe(1);
  });

  it('a background process outlives a crashed gateway: the next one reaches it by its id and stops it', async () => {
    const w = await world();
    const { provider: a, crash } = await crashableGateway(w, {}, SHORT, {});
    const b = gateway(w);
    await a.reconcileNow();
    const id = await a.acquire(T('server'));
    const command = 'echo up; while read l; do echo "got:$l"; done';
    const server = await a.get(id)!.processes.start(command);
    await a.renewLeases();
    await crash();
    await until('the crashed gateway’s lease to lapse', async () =>
      (await leaseKeys(w)).length === 0 ? true : undefined,
    );

    // The next turn lands on B, whose client of the VM is new: the id A handed out still works.
    expect(await b.acquire(T('server'))).toBe(id);
    const there = await b.get(id)!.processes.get(server.id);
    expect(there?.command).toBe(command);
    expect((await b.get(id)!.processes.list()).map((p) => p.id)).toEqual([server.id]);
    await there!.write('ping\n');
    await until('B to read what the process answered', async () =>
      (await there!.output()).text.includes('got:ping') ? true : undefined,
    );
    await there!.kill('SIGKILL');
    expect((await there!.wait())?.exitCode === 0).toBe(false);
    expect(await server.wait()).toBeDefined();
    expect(kills(w)).toBe(0);
  });

  it('replicas=2, reject, three gateways: two VMs exist deployment-wide; the third is refused until a release + kill frees a slot', async () => {
    const w = await world();
    const gateways = [0, 1, 2].map(() => gateway(w, { replicas: 2 }));
    await gateways[0]!.reconcileNow();

    const threads = ['t-a', 't-b', 't-c'];
    const results = await Promise.allSettled(gateways.map((g, i) => g.acquire(T(threads[i]!))));
    const won = results.flatMap((r, i) =>
      r.status === 'fulfilled' ? [{ g: gateways[i]!, id: r.value }] : [],
    );
    const lostAt = results.findIndex((r) => r.status === 'rejected');
    expect(won).toHaveLength(2);
    expect(lostAt).toBeGreaterThanOrEqual(0);
    const refusal = (results[lostAt] as PromiseRejectedResult).reason as unknown;
    expect(refusal).toBeInstanceOf(SandboxCapacityExceededError);
    expect((refusal as SandboxCapacityExceededError).reason).toBe('capacity');
    const loser = { g: gateways[lostAt]!, thread: threads[lostAt]! };
    const [first, second] = won as [(typeof won)[0], (typeof won)[0]];
    const wonIds = [first.id, second.id].sort();
    expect(creates(w)).toBe(2);
    expect(alive(w)).toEqual(wonIds);
    expect(await ledgerSlots(w)).toEqual(wonIds);

    const refused = async () => {
      const err = await loser.g.acquire(T(loser.thread)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SandboxCapacityExceededError);
      expect((err as SandboxCapacityExceededError).reason).toBe('capacity');
    };
    await refused();
    expect(creates(w)).toBe(2);

    // A warm VM keeps its deployment-wide slot, and no gateway can evict a peer's warm VM.
    await first.g.release(first.id);
    expect(first.g.warmIds()).toEqual([first.id]);
    await refused();
    expect(alive(w)).toEqual(wonIds);

    // The first winner needs a thread-less sandbox: the ledger is full, so it kills its own warm
    // VM for the slot...
    const scratch = await first.g.acquire();
    expect(kills(w)).toBe(1);
    expect(alive(w)).toEqual([second.id, scratch].sort());
    await refused();
    // ...and a thread-less sandbox is killed on release: that frees the slot for another gateway.
    await first.g.release(scratch);
    expect(kills(w)).toBe(2);
    expect(await ledgerSlots(w)).toEqual([second.id]);
    const third = await loser.g.acquire(T(loser.thread));
    expect(alive(w)).toEqual([second.id, third].sort());
    expect(await ledgerSlots(w)).toEqual([second.id, third].sort());
    expect(creates(w)).toBe(4);
  });

  it('a crashed gateway’s VMs are left alone while its leases live; then B adopts the canonical ones and reaps the duplicate', async () => {
    const w = await world();
    // TTL 3 s, grace 1 s: the grace runs out while the crashed owner's leases still live.
    const timing: Timing = { renewal: 1, multiplier: 3 };
    const graceMs = 1_000;
    const e2b = { reconciliation_grace_seconds: graceMs / 1000 };
    const {
      provider: a,
      ownership: storeA,
      crash,
    } = await crashableGateway(w, { replicas: 4 }, timing, e2b);
    const b = gateway(w, { replicas: 4 }, timing, e2b);
    await a.reconcileNow();
    const [ownerA, ownerB] = await Promise.all([a.ownerId(), b.ownerId()]);

    const v1 = await a.acquire(T('crash-1'));
    expect(await a.get(v1)!.executeCommand('echo from-a > /home/user/turn-marker && echo ok')).toBe(
      'ok\n',
    );
    const v2 = await a.acquire(T('crash-2'));
    await a.release(v2);
    // A VM of thread crash-1 created after v1 (a create A lost track of): a duplicate A leases.
    const sdk = new SdkE2BClient({
      apiKey: w.standin.apiKey,
      apiUrl: w.standin.url,
      sandboxUrl: w.standin.url,
    });
    const { [E2B_TAGS.capacityReservation]: _token, ...v1Tags } = w.standin.vms.get(v1)!.metadata;
    const dup = (
      await sdk.create({
        template: 'base',
        metadata: {
          ...v1Tags,
          [E2B_TAGS.createdAt]: String(Number(v1Tags[E2B_TAGS.createdAt]) + 1),
        },
      })
    ).sandboxId;
    expect(await storeA.take(dup)).toBe(true);
    // Fresh leases, then the crash: no shutdown, the Redis clients just go away.
    await a.renewLeases();
    await crash();
    const vms = [v1, v2, dup].sort();
    expect(alive(w)).toEqual(vms);

    // While A's leases live, B touches nothing: no adoption, no kill.
    const firstPass = await b.reconcileNow();
    const firstSeenAt = Date.now();
    expect(firstPass).toMatchObject({ discovered: 3, adopted: 0, killed: 0 });
    // Past the duplicate's grace, A's lease still keeps it.
    await until('the duplicate grace to run out', async () =>
      Date.now() > firstSeenAt + graceMs + 100 ? true : undefined,
    );
    expect(await b.reconcileNow()).toMatchObject({ adopted: 0, killed: 0 });
    for (const id of vms) expect(await lease(w, id)).toBe(`own:${ownerA}`);
    expect(alive(w)).toEqual(vms);
    expect(b.warmIds()).toEqual([]);
    expect(kills(w)).toBe(0);

    await until('the crashed gateway’s leases to lapse', async () =>
      (await leaseKeys(w)).length === 0 ? true : undefined,
    );
    // Unowned now, but a live owner might be about to re-claim (a flush looks the same): B waits
    // until it has seen them unowned for a whole lease TTL.
    expect(await b.reconcileNow()).toMatchObject({ adopted: 0, killed: 0 });
    const unownedSeenAt = Date.now();
    const ttlMs = timing.renewal * timing.multiplier * 1000;
    await until('one lease TTL of the VMs unowned', async () =>
      Date.now() > unownedSeenAt + ttlMs + 100 ? true : undefined,
    );
    // One pass adopts both canonical VMs (into the warm pool) and reaps the duplicate.
    expect(await b.reconcileNow()).toMatchObject({ adopted: 2, killed: 1 });
    expect(b.warmIds().sort()).toEqual([v1, v2].sort());
    expect(await lease(w, v1)).toBe(`own:${ownerB}`);
    expect(await lease(w, v2)).toBe(`own:${ownerB}`);
    expect(await lease(w, dup)).toBeNull();
    expect(alive(w)).toEqual([v1, v2].sort());
    expect(kills(w)).toBe(1);

    // The thread's next turn on B continues in A's VM.
    expect(await b.acquire(T('crash-1'))).toBe(v1);
    expect(await b.get(v1)!.executeCommand('cat /home/user/turn-marker')).toBe('from-a\n');
    expect(await b.acquire(T('crash-2'))).toBe(v2);
    expect(creates(w)).toBe(3);
  });

  it('a flush of the deployment’s keys costs live VMs nothing: a peer adopts none, the owner re-claims', async () => {
    const w = await world();
    const a = gateway(w);
    const b = gateway(w);
    await a.reconcileNow();
    const [ownerA, ownerB] = await Promise.all([a.ownerId(), b.ownerId()]);
    const busy = await a.acquire(T('flush-busy'));
    const parked = await a.acquire(T('flush-parked'));
    await a.release(parked);
    const flush = async () => {
      const keys = await admin.keys(`${w.prefix}:*`);
      if (keys.length) await admin.del(...keys);
    };
    await flush();
    expect(await leaseKeys(w)).toEqual([]);
    // B's pass right after the flush: both VMs are unowned for a moment, and adopted by nobody.
    expect(await b.reconcileNow()).toMatchObject({ adopted: 0, killed: 0 });
    expect(b.warmIds()).toEqual([]);
    // A's renewal re-claims the lease of the VM it runs a turn in at once, and that of the VM it
    // only parks one renewal interval later (a peer running a turn in it would win it meanwhile):
    // both well within one TTL, so B's later passes see them owned.
    await a.renewLeases();
    expect(await lease(w, busy)).toBe(`own:${ownerA}`);
    const ttlMs = SHORT.renewal * SHORT.multiplier * 1000;
    const start = Date.now();
    await until('one lease TTL after the flush', async () => {
      await a.renewLeases();
      return Date.now() > start + ttlMs + 100 ? true : undefined;
    });
    expect(await lease(w, parked)).toBe(`own:${ownerA}`);
    expect(await b.reconcileNow()).toMatchObject({ adopted: 0, killed: 0 });
    expect(b.warmIds()).toEqual([]);
    expect(await lease(w, busy)).not.toBe(`own:${ownerB}`);
    expect(await a.get(busy)!.executeCommand('echo still-mine')).toBe('still-mine\n');
    expect(a.warmIds()).toEqual([parked]);
    expect(kills(w)).toBe(0);
  });

  it('a kill slower than the lease TTL: the held del: marker keeps a peer from adopting the VM; released after the kill', async () => {
    const w = await world();
    const a = gateway(w, { replicas: 1 });
    const b = gateway(w, { replicas: 1 });
    await a.reconcileNow();
    const ownerA = await a.ownerId();
    const ttlMs = SHORT.renewal * SHORT.multiplier * 1000;

    const id = await a.acquire(T('slow-kill'));
    await a.release(id);
    expect(a.warmIds()).toEqual([id]);

    const hold = w.standin.holdKills();
    // Runs before the gateways' shutdowns, which would otherwise wait on the held kill.
    cleanups.push(async () => hold.release());
    // A's one slot holds the warm VM: a thread-less acquire evicts (kills) it first.
    const evicting = a.acquire();
    expect(await hold.held).toBe(id);
    expect(await lease(w, id)).toBe(`del:${ownerA}`);
    const firstExpiry = Date.now() + (await admin.pttl(leaseKey(w, id)));
    await until('the marker to outlive its first TTL', async () => {
      expect(await lease(w, id)).toBe(`del:${ownerA}`);
      return Date.now() > firstExpiry + ttlMs / 2 ? true : undefined;
    });
    // A's own renewal pass leaves the marker alone.
    await a.renewLeases();
    expect(await lease(w, id)).toBe(`del:${ownerA}`);

    // The thread's next turn lands on B mid-kill: discovery sees the VM, the take is refused.
    const err = await b.acquire(T('slow-kill')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxBeingDestroyedError);
    expect(b.get(id)).toBeUndefined();
    expect(b.ownsLease(id)).toBe(false);
    // Nor does B's reconciliation adopt it, or hold a slot for it.
    expect(await b.reconcileNow()).toMatchObject({ adopted: 0, killed: 0 });
    expect(b.warmIds()).toEqual([]);
    expect(b.capacitySnapshot().total).toBe(0);
    expect(await lease(w, id)).toBe(`del:${ownerA}`);
    expect(alive(w)).toEqual([id]);
    expect(kills(w)).toBe(1);

    hold.release();
    const scratch = await evicting;
    expect(await lease(w, id)).toBeNull();
    expect(alive(w)).toEqual([scratch]);
    await a.release(scratch);

    // Once the kill is over the thread cold-starts on B.
    const fresh = await b.acquire(T('slow-kill'));
    expect(fresh).not.toBe(id);
    expect(await lease(w, fresh)).toBe(`own:${await b.ownerId()}`);
    expect(alive(w)).toEqual([fresh]);
  });

  it('shutdown() of every gateway leaves no VM in the backend and no lease or ledger slot in Redis', async () => {
    const w = await world();
    const [a, b, c] = [0, 1, 2].map(() => gateway(w, { replicas: 4 })) as [
      E2BSandboxProvider,
      E2BSandboxProvider,
      E2BSandboxProvider,
    ];
    await a.reconcileNow();
    const one = await a.acquire(T('end-1'));
    await a.acquire(T('end-2'));
    await a.release(one);
    expect(await b.acquire(T('end-1'))).toBe(one); // moved to B; A keeps a stale warm entry
    const three = await c.acquire(T('end-3'));
    await c.release(three);
    await b.acquire(T('end-4'));
    expect(alive(w)).toHaveLength(4);
    expect(await leaseKeys(w)).toHaveLength(4);
    expect(await ledgerSlots(w)).toHaveLength(4);

    await Promise.all([a.shutdown(), b.shutdown(), c.shutdown()]);
    expect(alive(w)).toEqual([]);
    expect(kills(w)).toBe(4);
    expect(await leaseKeys(w)).toEqual([]);
    expect(await ledgerSlots(w)).toEqual([]);
  });
});
