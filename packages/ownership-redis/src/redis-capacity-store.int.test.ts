import { CapacityReserveOutcome, isSbxError } from '@sbx/core';
import { describeCapacityStoreContract, requireService } from '@sbx/core/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisCapacityStore, RedisCapacityStore } from './redis-capacity-store.js';
import { freePort } from './testing/own-redis-server.js';
import { redisCapacityHarness, uniquePrefix } from './testing/redis-store-harness.js';

const url = await requireService('redis');

describe.skipIf(!url)('RedisCapacityStore on a real redis-server', () => {
  describeCapacityStoreContract('RedisCapacityStore', () => redisCapacityHarness(url!));

  let admin: Redis;
  beforeAll(async () => {
    admin = new Redis(url!);
  });
  afterAll(async () => {
    await admin.quit();
  });

  it('keeps the whole ledger in one key, <prefix>:e2b-capacity (8.4 #100/#101)', async () => {
    const prefix = uniquePrefix('cap-key');
    const g1 = await createRedisCapacityStore({ url: url!, keyPrefix: prefix, hardLimit: 1 });
    const g2 = await createRedisCapacityStore({ url: url!, keyPrefix: `${prefix}:`, hardLimit: 1 });
    try {
      expect(g1.keys.capacityKey).toBe(`${prefix}:e2b-capacity`);
      await g1.reconcile({ expectedRevision: 0, entries: [], complete: true, maxAgeMs: 1000 });
      const results = await Promise.all([g1.reserve('a'), g2.reserve('b')]);
      expect([...results].sort()).toEqual([
        CapacityReserveOutcome.FULL,
        CapacityReserveOutcome.GRANTED,
      ]);
      expect(await admin.keys(`${prefix}*`)).toEqual([`${prefix}:e2b-capacity`]);
      expect(await admin.type(`${prefix}:e2b-capacity`)).toBe('hash');
    } finally {
      await admin.del(`${prefix}:e2b-capacity`);
      await g1.close();
      await g2.close();
    }
  });

  it("compat 'deerflow' uses the reference's default ledger key", async () => {
    const store = await createRedisCapacityStore({ url: url!, compat: 'deerflow', hardLimit: 2 });
    expect(store.keys.capacityKey).toBe('deerflow:sandbox:owner:e2b-capacity');
    await store.close();
  });

  it('reservation times come from the Redis server clock', async () => {
    const prefix = uniquePrefix('cap-time');
    const store = await createRedisCapacityStore({ url: url!, keyPrefix: prefix, hardLimit: 2 });
    try {
      await store.reconcile({ expectedRevision: 0, entries: [], complete: true, maxAgeMs: 1000 });
      const [sec, usec] = await admin.time();
      await store.reserve('tok');
      const reservedAt = Number(await admin.hget(store.keys.capacityKey, 'r:tok'));
      const serverMs = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
      expect(reservedAt).toBeGreaterThanOrEqual(serverMs);
      expect(reservedAt - serverMs).toBeLessThan(60_000);
    } finally {
      await admin.del(store.keys.capacityKey);
      await store.close();
    }
  });

  it('maxAgeMs 0 is inclusive on the server clock: an inventory in the same millisecond drops a just-marked VM and a just-made reservation', async () => {
    const prefix = uniquePrefix('cap-boundary');
    const store = await createRedisCapacityStore({ url: url!, keyPrefix: prefix, hardLimit: 4 });
    const sweep = (expectedRevision: number) =>
      store.reconcile({ expectedRevision, entries: [], complete: true, maxAgeMs: 0 });
    const slots = async () =>
      Object.keys(await admin.hgetall(store.keys.capacityKey)).filter(
        (f) => !f.startsWith('meta:'),
      );
    try {
      expect(await sweep(0)).toBe(true);
      // Each pair is sent together and usually runs within one server millisecond, where the age
      // is exactly 0. Repeated so that a pair straddling a millisecond cannot hide a comparison
      // that drops only what is strictly older.
      for (let i = 0; i < 5; i += 1) {
        await store.track(`vm-${i}`);
        const marked = await store.revision();
        // The first marks the VM missing (a change: revision + 1), the second removes it.
        expect(await Promise.all([sweep(marked), sweep(marked + 1)])).toEqual([true, true]);
        expect(await slots()).toEqual([]);
        const reserving = await store.revision();
        expect(await Promise.all([store.reserve(`tok-${i}`), sweep(reserving + 1)])).toEqual([
          CapacityReserveOutcome.GRANTED,
          true,
        ]);
        expect(await slots()).toEqual([]);
      }
    } finally {
      await admin.del(store.keys.capacityKey);
      await store.close();
    }
  });

  it('a track that counts a new VM bumps the revision: an inventory listed before it is stale', async () => {
    const prefix = uniquePrefix('cap-track-rev');
    const store = await createRedisCapacityStore({ url: url!, keyPrefix: prefix, hardLimit: 2 });
    try {
      await store.reconcile({ expectedRevision: 0, entries: [], complete: true, maxAgeMs: 0 });
      const listedAt = await store.revision();
      await store.track('vm-new');
      expect(
        await store.reconcile({
          expectedRevision: listedAt,
          entries: [],
          complete: true,
          maxAgeMs: 0,
        }),
      ).toBe(false);
      expect(await admin.hget(store.keys.capacityKey, 's:vm-new')).toBe('1');
    } finally {
      await admin.del(store.keys.capacityKey);
      await store.close();
    }
  });

  it('an injected client is used as-is and left open by close()', async () => {
    const client = new Redis(url!);
    const prefix = uniquePrefix('cap-injected');
    const store = new RedisCapacityStore(client, { keyPrefix: prefix, hardLimit: 1 });
    expect(await store.revision()).toBe(0);
    await store.close();
    await store.close();
    expect(await client.ping()).toBe('PONG');
    await client.quit();
  });
});

describe('RedisCapacityStore without a server', () => {
  it('an unreachable Redis makes every operation raise CapacityBackendError (8.4 #100)', async () => {
    const port = await freePort();
    const store = await createRedisCapacityStore({
      url: `redis://127.0.0.1:${port}`,
      hardLimit: 2,
      commandTimeoutMs: 2_000,
    });
    try {
      for (const call of [
        () => store.reserve('tok'),
        () => store.revision(),
        () => store.track('vm'),
        () => store.release('vm'),
        () => store.reconcile({ expectedRevision: 0, entries: [], complete: true, maxAgeMs: 0 }),
      ]) {
        const err = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isSbxError(err) && err.code).toBe('CAPACITY_BACKEND');
      }
    } finally {
      await store.close();
    }
  });

  it('rejects a hard limit below 1 before connecting', async () => {
    await expect(
      createRedisCapacityStore({ url: 'redis://127.0.0.1:1', hardLimit: 0 }),
    ).rejects.toThrow(/hardLimit/);
  });
});
