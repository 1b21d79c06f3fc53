import { randomUUID } from 'node:crypto';
import type { CapacityStoreHarness, OwnershipStoreHarness } from '@sbx/core/testing';
import { Redis } from 'ioredis';
import { keyLayout } from '../key-layout.js';
import { createRedisCapacityStore } from '../redis-capacity-store.js';
import type { RedisCapacityStore } from '../redis-capacity-store.js';
import { createRedisOwnershipStore } from '../redis-ownership-store.js';
import type { RedisOwnershipStore } from '../redis-ownership-store.js';

/** A key prefix no other test run or user shares, so tests never touch foreign keys. */
export function uniquePrefix(label: string): string {
  return `sbxtest:${label}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

async function deleteByPrefix(admin: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await admin.del(...keys);
  } while (cursor !== '0');
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Stores on one real Redis under a unique prefix; `elapse` waits for real (Redis owns the clock). */
export async function redisOwnershipHarness(url: string): Promise<OwnershipStoreHarness> {
  const prefix = uniquePrefix('own');
  const keys = keyLayout({ keyPrefix: prefix });
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await admin.connect();
  const stores: RedisOwnershipStore[] = [];
  return {
    async open(options = {}) {
      const store = await createRedisOwnershipStore({
        url,
        keyPrefix: prefix,
        ownerId: options.ownerId,
        ttlSeconds: options.ttlSeconds ?? 60,
      });
      stores.push(store);
      return store;
    },
    async expire(id) {
      await admin.del(keys.leaseKey(id));
    },
    async remainingTtlMs(id) {
      const ttl = await admin.pttl(keys.leaseKey(id));
      if (ttl === -2) return undefined;
      if (ttl === -1) return Number.POSITIVE_INFINITY;
      return ttl;
    },
    elapse: sleep,
    async cleanup() {
      await Promise.all(stores.map((s) => s.close()));
      await deleteByPrefix(admin, prefix);
      await admin.quit();
    },
  };
}

/** One ledger hash on a real Redis under a unique prefix. */
export async function redisCapacityHarness(url: string): Promise<CapacityStoreHarness> {
  const prefix = uniquePrefix('cap');
  const key = keyLayout({ keyPrefix: prefix }).capacityKey;
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await admin.connect();
  const stores: RedisCapacityStore[] = [];
  return {
    async open(hardLimit) {
      const store = await createRedisCapacityStore({ url, keyPrefix: prefix, hardLimit });
      stores.push(store);
      return store;
    },
    async fields() {
      return admin.hgetall(key);
    },
    async wipe() {
      await admin.del(key);
    },
    async cleanup() {
      await Promise.all(stores.map((s) => s.close()));
      await deleteByPrefix(admin, prefix);
      await admin.quit();
    },
  };
}
