import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MemoryOwnershipStore, parseSandboxConfig, threadLayout } from '@sbx/core';
import { MemoryLeaseTable, deriveSandboxScopeToken } from '@sbx/core/provider-kit';
import type { OwnershipStore } from '@sbx/core';
import { settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { bootstrapScript } from './bootstrap.js';
import { resolveE2BSettings } from './e2b-config.js';
import { E2BSandboxProvider } from './e2b-sandbox-provider.js';
import { E2B_TAGS } from './metadata.js';
import { OUTPUT_SYNC_MANIFEST } from './output-sync.js';
import { makeHarness, recordingLogger } from './test-support.js';
import type { Harness } from './test-support.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';
import { fakeErrors } from './testing/fake-e2b-errors.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function harness(options: Parameters<typeof makeHarness>[0] = {}): Promise<Harness> {
  const h = await makeHarness(options);
  cleanups.push(h.cleanup);
  return h;
}
const T = { userId: 'u1', threadId: 't1' };

/** Records ownership calls, in order, with the number of kills the fake saw at that moment. */
function recordingStore(inner: OwnershipStore, fake: () => FakeE2BClient) {
  const events: string[] = [];
  const store: OwnershipStore = {
    get ownerId() {
      return inner.ownerId;
    },
    supportsCrossProcess: inner.supportsCrossProcess,
    take: async (id) => {
      events.push(`take(kills=${fake().callsOf('kill').length})`);
      return inner.take(id);
    },
    claim: async (id, o) => {
      events.push(
        `claim${o?.forDestroy ? ':destroy' : ''}(kills=${fake().callsOf('kill').length})`,
      );
      return inner.claim(id, o);
    },
    renew: (id) => inner.renew(id),
    release: async (id) => {
      events.push(`release(kills=${fake().callsOf('kill').length})`);
      return inner.release(id);
    },
    owner: (id) => inner.owner(id),
    close: () => inner.close(),
  };
  return { store, events };
}

describe('§8.2 E2B lifecycle', () => {
  it('§8.2.34 the thread key is (user, thread)', async () => {
    const { provider } = await harness();
    const a = await provider.acquire(T);
    expect(await provider.acquire(T)).toBe(a);
    expect(await provider.acquire({ userId: 'u2', threadId: 't1' })).not.toBe(a);
    expect(await provider.acquire({ userId: 'u1', threadId: 't2' })).not.toBe(a);
  });

  it('§8.2.35 reuse returns the cached id and refreshes the remote timeout', async () => {
    const { provider, fake } = await harness({ config: { idle_timeout: 600 } });
    const id = await provider.acquire(T);
    const before = fake.callsOf('setTimeout', id).length;
    expect(await provider.acquire(T)).toBe(id);
    expect(fake.callsOf('setTimeout', id).length).toBe(before + 1);
    expect(fake.callsOf('setTimeout', id).at(-1)!.detail).toBe(600_000);
    expect(fake.callsOf('create')).toHaveLength(1);
  });

  it('§8.2.36 reuse drops a known-dead adapter and one whose ping says gone', async () => {
    const { provider, fake } = await harness();
    const id = await provider.acquire(T);
    // Known dead (a gone error seen by a tool call) and really gone remotely.
    fake.reap(id);
    provider.get(id)!.markDead();
    const runsBefore = fake.callsOf('run', id).length;
    const second = await provider.acquire(T);
    expect(fake.callsOf('run', id)).toHaveLength(runsBefore); // no ping for a known-dead adapter
    expect(second).not.toBe(id);
    expect(provider.get(id)).toBeUndefined();
    fake.reap(second);
    const third = await provider.acquire(T);
    expect(third).not.toBe(second);
    expect(fake.callsOf('create')).toHaveLength(3);
  });

  it('§8.2.37 reclaim reconnects the warm id, registers it active and empties the pool', async () => {
    const { provider, fake } = await harness();
    const id = await provider.acquire(T);
    await provider.release(id);
    expect(provider.warmIds()).toEqual([id]);
    expect(provider.get(id)).toBeUndefined();
    expect(await provider.acquire(T)).toBe(id);
    expect(provider.warmIds()).toEqual([]);
    expect(fake.callsOf('connect', id)).toHaveLength(1);
    expect(fake.callsOf('create')).toHaveLength(1);
  });

  it('§8.2.38 reclaiming a zombie drops it and creates; a connect exception keeps a tombstone', async () => {
    const { provider, fake } = await harness();
    const id = await provider.acquire(T);
    await provider.release(id);
    fake.reap(id);
    const fresh = await provider.acquire(T);
    expect(fresh).not.toBe(id);
    expect(provider.warmIds()).toEqual([]);
    await provider.release(fresh);
    fake.fail('connect', fakeErrors.connectionReset(), { sandboxId: fresh });
    const third = await provider.acquire(T);
    expect(third).not.toBe(fresh);
    expect(provider.tombstoneIds()).toEqual([fresh]);
  });

  it('§8.2.39 reclaim ignores warm entries of another seed', async () => {
    const { provider } = await harness();
    const other = await provider.acquire({ userId: 'u1', threadId: 'other' });
    await provider.release(other);
    const mine = await provider.acquire(T);
    expect(mine).not.toBe(other);
    expect(provider.warmIds()).toEqual([other]);
  });

  it('§8.2.40 a warm VM that fails bootstrap is killed and closed, and acquire creates a fresh VM', async () => {
    const { provider, fake } = await harness();
    const id = await provider.acquire(T);
    await provider.release(id);
    // ping passes, then the bootstrap script fails
    fake.gate.pause('run', { times: 2 });
    const pending = provider.acquire(T);
    (await fake.gate.nextCall('run')).release();
    (await fake.gate.nextCall('run')).fail(fakeErrors.connectionReset());
    const fresh = await pending;
    expect(fresh).not.toBe(id);
    expect(fake.callsOf('kill', id)).toHaveLength(1);
    expect(fake.callsOf('close', id).length).toBeGreaterThan(0);
    expect(fake.vms.get(id)!.alive).toBe(false);
  });

  it('§8.2.41 discovery walks the paginator to the matching (user, thread) VM', async () => {
    const fake = new FakeE2BClient({ pageSize: 1 });
    cleanups.push(() => fake.dispose());
    const { provider } = await harness({ fake });
    for (let i = 0; i < 3; i++) {
      await fake.seed({
        metadata: {
          [E2B_TAGS.provider]: 'e2b_sandbox_provider',
          [E2B_TAGS.user]: 'x',
          [E2B_TAGS.thread]: String(i),
        },
      });
    }
    const target = await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 't1',
        [E2B_TAGS.createdAt]: '1',
      },
    });
    expect(await provider.acquire(T)).toBe(target.sandboxId);
    expect(fake.callsOf('create')).toHaveLength(0);
    const query = fake.callsOf('list')[0]!.detail as {
      query: { metadata: Record<string, string> };
    };
    expect(query.query.metadata).toEqual({
      [E2B_TAGS.provider]: 'e2b_sandbox_provider',
      [E2B_TAGS.user]: 'u1',
      [E2B_TAGS.thread]: 't1',
    });
  });

  it('§8.2.42 discovery skips a dead candidate, adopts a later one, and owns it', async () => {
    const { provider, fake, ownership } = await harness();
    const meta = (c: string) => ({
      [E2B_TAGS.provider]: 'e2b_sandbox_provider',
      [E2B_TAGS.user]: 'u1',
      [E2B_TAGS.thread]: 't1',
      [E2B_TAGS.createdAt]: c,
    });
    const dead = await fake.seed({ metadata: meta('1') });
    const live = await fake.seed({ metadata: meta('2') });
    fake.fail('run', fakeErrors.notRunning(), { sandboxId: dead.sandboxId });
    expect(await provider.acquire(T)).toBe(live.sandboxId);
    expect(fake.callsOf('close', dead.sandboxId)).toHaveLength(1);
    expect((await ownership.owner(live.sandboxId))?.ownerId).toBe(ownership.ownerId);
    expect(provider.ownsLease(live.sandboxId)).toBe(true);
  });

  it('§8.2.43 discovery gives up when listing raises and acquire creates', async () => {
    const { provider, fake } = await harness();
    fake.fail('list', new Error('list exploded'));
    const id = await provider.acquire(T);
    expect(fake.callsOf('create')).toHaveLength(1);
    expect(provider.get(id)).toBeDefined();
  });

  it('§8.2.44/45 a discovered VM that fails bootstrap is discarded: take → claim:destroy → kill → release', async () => {
    const fake = new FakeE2BClient();
    cleanups.push(() => fake.dispose());
    const rec = recordingStore(new MemoryOwnershipStore(), () => fake);
    const { provider } = await harness({ ownership: rec.store, fake });
    const found = await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 't1',
      },
    });
    fake.gate.pause('run', { times: 2 });
    const pending = provider.acquire(T);
    (await fake.gate.nextCall('run')).release(); // ping
    (await fake.gate.nextCall('run')).fail(new Error('bootstrap boom'));
    const id = await pending;
    expect(id).not.toBe(found.sandboxId);
    expect(fake.callsOf('kill', found.sandboxId)).toHaveLength(1);
    expect(fake.callsOf('close', found.sandboxId).length).toBeGreaterThan(0);
    expect(rec.events.slice(0, 3)).toEqual([
      'take(kills=0)',
      'claim:destroy(kills=0)',
      'release(kills=1)',
    ]);
  });

  it('§8.2.46 bootstrap failure leaves a VM a peer took over alone (closed, lease untouched)', async () => {
    const table = new MemoryLeaseTable();
    const mine = new MemoryOwnershipStore({ table });
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({ ownership: mine });
    const found = await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 't1',
      },
    });
    fake.gate.pause('run', { times: 2 });
    const pending = provider.acquire(T);
    (await fake.gate.nextCall('run')).release();
    const bootstrap = await fake.gate.nextCall('run');
    expect(await peer.take(found.sandboxId)).toBe(true);
    bootstrap.fail(new Error('bootstrap boom'));
    await pending;
    expect(fake.callsOf('kill', found.sandboxId)).toHaveLength(0);
    expect(fake.vms.get(found.sandboxId)!.alive).toBe(true);
    expect((await mine.owner(found.sandboxId))?.ownerId).toBe(peer.ownerId);
  });

  it('§8.2.47 the bootstrap script links the virtual roots and prints the marker', () => {
    const script = bootstrapScript('/home/user');
    for (const part of ['ln -sfn', '/mnt/user-data', '/mnt/acp-workspace', 'BOOTSTRAP_OK']) {
      expect(script).toContain(part);
    }
    expect(script).toMatch(/workspace .*uploads .*outputs .*acp-workspace/);
  });

  it('§8.2.47 a raising bootstrap run is reported as "bootstrap script raised"', async () => {
    const { provider, fake } = await harness();
    fake.fail('run', fakeErrors.connectionReset());
    const err = await provider.acquire(T).catch((e: unknown) => e);
    expect(String((err as Error).message)).toContain('bootstrap script raised');
  });

  it('§8.2.48 a failing create bootstrap raises a chained error, kills and closes the VM; get() is undefined', async () => {
    // A script that exits non-zero:
    const h2 = await harness();
    h2.fake.gate.pause('run', { times: 1 });
    const p2 = h2.provider.acquire(T);
    const c2 = await h2.fake.gate.nextCall('run');
    c2.fail(
      Object.assign(new Error(''), {
        name: 'CommandExitError',
        exitCode: 1,
        stdout: '',
        stderr: 'mkdir: denied',
      }),
    );
    const err = (await p2.catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('Failed to bootstrap e2b sandbox');
    expect(err.message).toContain('mkdir: denied');
    expect(err.cause).toBeInstanceOf(Error);
    const vmId = c2.args[0] as string;
    expect(h2.fake.callsOf('kill', vmId)).toHaveLength(1);
    expect(h2.fake.callsOf('close', vmId).length).toBeGreaterThan(0);
    expect(h2.provider.get(vmId)).toBeUndefined();
    expect(h2.provider.capacitySnapshot().reserved).toBe(0);
  });

  it('§8.2.48 the client is closed even when the kill fails (slot kept as a tombstone)', async () => {
    const { provider, fake } = await harness();
    fake.gate.pause('run', { times: 1 });
    const pending = provider.acquire(T);
    const call = await fake.gate.nextCall('run');
    const id = call.args[0] as string;
    fake.fail('kill', new Error('kill failed'), { sandboxId: id });
    call.fail(new Error('bootstrap boom'));
    await expect(pending).rejects.toThrow(/bootstrap/);
    expect(fake.callsOf('close', id).length).toBeGreaterThan(0);
    expect(provider.tombstoneIds()).toEqual([id]);
  });

  it('§8.2.51 release of an unknown id is a no-op; a dead adapter is killed, not parked', async () => {
    const { provider, fake } = await harness();
    await provider.release('nope');
    const id = await provider.acquire(T);
    provider.get(id)!.markDead();
    await provider.release(id);
    expect(provider.warmIds()).toEqual([]);
    expect(fake.callsOf('kill', id)).toHaveLength(1);
  });

  it('§8.2.52 a healthy release parks (seed, ts), refreshes the timeout and kills nothing', async () => {
    const { provider, fake, clock } = await harness();
    const id = await provider.acquire(T);
    const before = fake.callsOf('setTimeout', id).length;
    await provider.release(id);
    expect(provider.warmIds()).toEqual([id]);
    expect(fake.callsOf('kill')).toHaveLength(0);
    expect(fake.callsOf('setTimeout', id).length).toBe(before + 1);
    const snapshot = provider.capacitySnapshot();
    expect(snapshot).toMatchObject({ active: 0, warm: 1, transitioning: 0 });
    expect(deriveSandboxScopeToken(T)).toMatch(/^[0-9a-f]{16}$/);
    expect(clock.now()).toBeGreaterThan(0);
  });

  it('§8.2.53 an acquire of the same thread waits for a release in flight and then reclaims it', async () => {
    const { provider, fake } = await harness();
    const id = await provider.acquire(T);
    fake.gate.pause('run', { times: 1 });
    const releasing = provider.release(id);
    const listing = await fake.gate.nextCall('run');
    expect((listing.args[1] as { cmd: string }).cmd).toContain('-printf');
    const acquiring = track(provider.acquire(T));
    await settle();
    expect(acquiring.settled).toBe(false);
    await listing.release();
    await releasing;
    expect(await acquiring.promise).toBe(id);
    expect(fake.callsOf('list')).toHaveLength(1); // only the first acquire discovered
    expect(fake.callsOf('create')).toHaveLength(1);
  });

  it('§8.2.54 release does not park when the output listing reveals the VM is gone', async () => {
    const { provider, fake } = await harness();
    const id = await provider.acquire(T);
    fake.reap(id);
    await provider.release(id);
    expect(provider.warmIds()).toEqual([]);
    expect(fake.callsOf('kill', id)).toHaveLength(1);
  });

  it('§8.2.55 shutdown kills only sandboxes this instance owns; peer-owned ones are closed only', async () => {
    const table = new MemoryLeaseTable();
    const mine = new MemoryOwnershipStore({ table });
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({ ownership: mine });
    const a = await provider.acquire(T);
    const b = await provider.acquire({ userId: 'u1', threadId: 't2' });
    expect(await peer.take(b)).toBe(true);
    await provider.renewLeases(); // b is forgotten (LOST)
    const c = await provider.acquire({ userId: 'u1', threadId: 't3' });
    await peer.take(c); // c still tracked locally, but the peer holds it now
    await provider.shutdown();
    expect(fake.vms.get(a)!.alive).toBe(false);
    expect(fake.vms.get(b)!.alive).toBe(true);
    expect(fake.vms.get(c)!.alive).toBe(true);
    expect(fake.callsOf('close', c).length).toBeGreaterThan(0);
  });

  it('§8.2.56 the startup reconciliation runs in the background and does not block acquire', async () => {
    const fake = new FakeE2BClient();
    cleanups.push(() => fake.dispose());
    const provider = new E2BSandboxProvider({
      config: parseSandboxConfig({ use: '@sbx/e2b', base_dir: (await harness()).baseDir }),
      client: fake,
      ownershipStore: new MemoryOwnershipStore(),
      capacityStore: null,
    });
    cleanups.push(() => provider.shutdown());
    fake.gate.pause('list', { times: 1 });
    await provider.ready();
    const held = await fake.gate.nextCall('list'); // the startup pass is stuck in its listing
    const id = await provider.acquire(T);
    expect(provider.get(id)).toBeDefined();
    await held.release();
  });

  it('§8.2.57 renewal re-claims a lapsed lease; a lease a peer holds makes the provider forget (not kill)', async () => {
    const table = new MemoryLeaseTable();
    const mine = new MemoryOwnershipStore({ table });
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({ ownership: mine });
    const id = await provider.acquire(T);
    table.expire(id);
    await provider.renewLeases();
    expect((await mine.owner(id))?.ownerId).toBe(mine.ownerId);
    expect(provider.get(id)).toBeDefined();
    await peer.take(id);
    await provider.renewLeases();
    expect(provider.get(id)).toBeUndefined();
    expect(fake.callsOf('close', id).length).toBeGreaterThan(0);
    expect(fake.callsOf('kill', id)).toHaveLength(0);
    expect(fake.vms.get(id)!.alive).toBe(true);
  });
});

describe('§8.2 output mirroring on release', () => {
  async function turn(h: Harness, files: Record<string, string>) {
    const id = await h.provider.acquire(T);
    for (const [p, c] of Object.entries(files))
      await h.provider.get(id)!.writeFile(`/mnt/user-data/${p}`, c);
    await h.provider.release(id);
    return id;
  }

  it('§8.2.58 writes new files, skips unchanged ones on the next pass', async () => {
    const h = await harness();
    await turn(h, { 'outputs/a.txt': 'A', 'workspace/w/b.txt': 'B' });
    const dir = threadLayout(h.baseDir, 'u1', 't1').threadDir;
    expect(await readFile(path.join(dir, 'user-data/outputs/a.txt'), 'utf8')).toBe('A');
    expect(await readFile(path.join(dir, 'user-data/workspace/w/b.txt'), 'utf8')).toBe('B');
    const reads = h.fake.callsOf('read').length;
    await turn(h, {});
    expect(h.fake.callsOf('read').length).toBe(reads);
  });

  it('§8.2.59 prunes manifest entries of deleted files; a trailing space in a name survives', async () => {
    const h = await harness();
    const id = await turn(h, {
      'outputs/keep.txt': 'k',
      'outputs/gone.txt': 'g',
      'outputs/sp ': 's',
    });
    const dir = threadLayout(h.baseDir, 'u1', 't1').threadDir;
    expect(await readFile(path.join(dir, 'user-data/outputs/sp '), 'utf8')).toBe('s');
    await h.provider.acquire(T);
    await h.provider.get(id)!.executeCommand('rm /mnt/user-data/outputs/gone.txt');
    await h.provider.release(id);
    const manifest = JSON.parse(await readFile(path.join(dir, OUTPUT_SYNC_MANIFEST), 'utf8'));
    expect(Object.keys(manifest.files).sort()).toEqual(['outputs/keep.txt', 'outputs/sp ']);
  });

  it('§8.2.60 a manifest of another sandbox is discarded and rewritten for this one', async () => {
    const h = await harness();
    const dir = threadLayout(h.baseDir, 'u1', 't1').threadDir;
    await mkdir(dir, { recursive: true });
    await writeFile(
      path.join(dir, OUTPUT_SYNC_MANIFEST),
      JSON.stringify({ version: 1, sandbox_id: 'other', files: {} }),
    );
    const id = await turn(h, { 'outputs/a.txt': 'A' });
    const manifest = JSON.parse(await readFile(path.join(dir, OUTPUT_SYNC_MANIFEST), 'utf8'));
    expect(manifest.sandbox_id).toBe(id);
  });

  it('§8.2.61 an externally modified host file is restored from the remote', async () => {
    const h = await harness();
    await turn(h, { 'outputs/a.txt': 'remote' });
    const host = path.join(
      threadLayout(h.baseDir, 'u1', 't1').threadDir,
      'user-data/outputs/a.txt',
    );
    await writeFile(host, 'tampered on host');
    await turn(h, {});
    expect(await readFile(host, 'utf8')).toBe('remote');
  });
});

describe('§8.2 configuration', () => {
  it('§8.2.64 documented keys pass silently; an unknown key is named in one warning', () => {
    const logger = recordingLogger();
    resolveE2BSettings(
      parseSandboxConfig({
        use: '@sbx/e2b',
        e2b: {
          reconciliation_grace_seconds: 5,
          reconciliation_max_items: 3,
          overflo_policy: 'reject',
        },
      }),
      logger,
    );
    const warnings = logger.lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toBe(
      'E2BSandboxProvider: unknown sandbox config fields: overflo_policy',
    );
  });

  it('§8.2.64 the schema rejects invalid policy, acquire_timeout 0, burst_limit -1, replicas 0', () => {
    for (const bad of [
      { overflow_policy: 'spill' },
      { acquire_timeout: 0 },
      { burst_limit: -1 },
      { replicas: 0 },
    ]) {
      expect(() => parseSandboxConfig({ use: '@sbx/e2b', ...bad })).toThrow();
    }
  });

  it('§8.2.65 defaults: wait, 30 s, no burst; burst with 0 becomes reject', () => {
    const s = resolveE2BSettings(parseSandboxConfig({ use: '@sbx/e2b' }));
    expect(s).toMatchObject({
      overflowPolicy: 'wait',
      acquireTimeoutSeconds: 30,
      burstLimit: 0,
      replicas: 3,
      capacityLimit: 3,
    });
    const logger = recordingLogger();
    expect(
      resolveE2BSettings(parseSandboxConfig({ use: '@sbx/e2b', overflow_policy: 'burst' }), logger)
        .overflowPolicy,
    ).toBe('reject');
    expect(logger.text('warn')).toContain('burst');
  });
});
