import { RenewOutcome, isSbxError } from '@sbx/core';
import { describeOwnershipStoreContract, requireService } from '@sbx/core/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisOwnershipStore, createRedisOwnershipStore } from './redis-ownership-store.js';
import { freePort } from './testing/own-redis-server.js';
import { redisOwnershipHarness, uniquePrefix } from './testing/redis-store-harness.js';

const url = await requireService('redis');

describe.skipIf(!url)('RedisOwnershipStore on a real redis-server', () => {
  describeOwnershipStoreContract('RedisOwnershipStore', () => redisOwnershipHarness(url!), {
    supportsCrossProcess: true,
  });
});

describe.skipIf(!url)('RedisOwnershipStore keys, values and TTL', () => {
  let admin: Redis;
  beforeAll(async () => {
    admin = new Redis(url!);
  });
  afterAll(async () => {
    await admin.quit();
  });

  it('writes own:/del:<ownerId> at <prefix>:sandbox:owner:<id> with PX = TTL in ms', async () => {
    const prefix = uniquePrefix('layout');
    const store = await createRedisOwnershipStore({
      url: url!,
      keyPrefix: prefix,
      ownerId: 'host-a:0123',
      ttlSeconds: 7.5,
    });
    const key = `${prefix}:sandbox:owner:0123456789abcdef`;
    try {
      expect(await store.take('0123456789abcdef')).toBe(true);
      expect(await admin.get(key)).toBe('own:host-a:0123');
      const ttl = await admin.pttl(key);
      expect(ttl).toBeGreaterThan(6_000);
      expect(ttl).toBeLessThanOrEqual(7_500);
      expect(await store.claim('0123456789abcdef', { forDestroy: true })).toBe(true);
      expect(await admin.get(key)).toBe('del:host-a:0123');
    } finally {
      await admin.del(key);
      await store.close();
    }
  });

  it("compat 'deerflow' reproduces the reference keys deerflow:sandbox:owner:<id>", async () => {
    const store = await createRedisOwnershipStore({ url: url!, compat: 'deerflow' });
    const id = `compat-${process.pid}-${Date.now()}`;
    try {
      expect(store.keys.leaseKey(id)).toBe(`deerflow:sandbox:owner:${id}`);
      await store.claim(id);
      expect(await admin.get(`deerflow:sandbox:owner:${id}`)).toBe(`own:${store.ownerId}`);
    } finally {
      await admin.del(`deerflow:sandbox:owner:${id}`);
      await store.close();
    }
  });

  it('interoperates with a lease written by another implementation using the same format', async () => {
    const prefix = uniquePrefix('interop');
    const store = await createRedisOwnershipStore({ url: url!, keyPrefix: prefix });
    const key = store.keys.leaseKey('vm-1');
    try {
      await admin.set(key, 'del:other-host:ffff', 'PX', 60_000);
      expect(await store.owner('vm-1')).toEqual({ state: 'del', ownerId: 'other-host:ffff' });
      expect(await store.take('vm-1')).toBe(false);
    } finally {
      await admin.del(key);
      await store.close();
    }
  });

  it('a value that is not a lease makes owner() raise OwnershipBackendError (unknown, not unowned)', async () => {
    const prefix = uniquePrefix('garbage');
    const store = await createRedisOwnershipStore({ url: url!, keyPrefix: prefix });
    const key = store.keys.leaseKey('vm-1');
    try {
      await admin.set(key, 'something-else');
      const err = await store.owner('vm-1').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isSbxError(err) && err.code).toBe('OWNERSHIP_BACKEND');
      // The scripts treat it as a peer's lease: claim refuses, take overwrites it.
      expect(await store.claim('vm-1')).toBe(false);
      expect(await store.renew('vm-1')).toBe(RenewOutcome.LOST);
    } finally {
      await admin.del(key);
      await store.close();
    }
  });

  it('an injected client is used as-is and left open by close()', async () => {
    const client = new Redis(url!);
    const store = new RedisOwnershipStore(client, { keyPrefix: uniquePrefix('injected') });
    expect(store.supportsCrossProcess).toBe(true);
    expect(await store.owner('vm-1')).toBeUndefined();
    await store.close();
    await store.close();
    expect(await client.ping()).toBe('PONG');
    await client.quit();
  });

  it('two stores on one injected client share the registered scripts', async () => {
    const client = new Redis(url!);
    const prefix = uniquePrefix('shared-client');
    const a = new RedisOwnershipStore(client, { keyPrefix: prefix });
    const b = new RedisOwnershipStore(client, { keyPrefix: prefix });
    try {
      expect(await a.claim('vm')).toBe(true);
      expect(await b.claim('vm')).toBe(false);
    } finally {
      await admin.del(a.keys.leaseKey('vm'));
      await client.quit();
    }
  });
});

describe('RedisOwnershipStore without a server', () => {
  it('pointed at a dead port, every method raises OwnershipBackendError (9.6 #94)', async () => {
    const port = await freePort();
    const store = await createRedisOwnershipStore({
      url: `redis://127.0.0.1:${port}`,
      commandTimeoutMs: 2_000,
    });
    try {
      for (const call of [
        () => store.claim('s'),
        () => store.claim('s', { forDestroy: true }),
        () => store.take('s'),
        () => store.renew('s'),
        () => store.release('s'),
        () => store.owner('s'),
      ]) {
        const err = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isSbxError(err) && err.code).toBe('OWNERSHIP_BACKEND');
        expect((err as Error).message).toMatch(/sandbox s ownership in Redis/);
      }
    } finally {
      await store.close();
    }
  });

  it('reports supportsCrossProcess = true without connecting (9.6 #97)', async () => {
    const store = await createRedisOwnershipStore({ url: 'redis://127.0.0.1:1' });
    expect(store.supportsCrossProcess).toBe(true);
    expect(store.connection.client.status).toBe('wait');
    await store.close();
  });

  it('rejects a URL that is not redis:// or rediss://', async () => {
    await expect(createRedisOwnershipStore({ url: 'http://127.0.0.1:6379' })).rejects.toThrow(
      /redis:\/\//,
    );
  });
});
