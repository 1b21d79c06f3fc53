import {
  createCapacityStore,
  createOwnershipStore,
  resolveOwnershipConfig,
  silentLogger,
} from '@sbx/core';
import type { OwnershipRedisModule } from '@sbx/core';
import { requireService } from '@sbx/core/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import * as ownershipRedis from './index.js';
import { RedisCapacityStore } from './redis-capacity-store.js';
import { RedisOwnershipStore } from './redis-ownership-store.js';
import { uniquePrefix } from './testing/redis-store-harness.js';

// Compile-time proof that this package satisfies what core's factory loads lazily.
const moduleShape: OwnershipRedisModule = ownershipRedis;

const url = await requireService('redis');

describe('core factories load @sbx/ownership-redis', () => {
  it('exports what core expects', () => {
    expect(typeof moduleShape.createRedisOwnershipStore).toBe('function');
    expect(typeof moduleShape.createRedisCapacityStore).toBe('function');
  });

  describe.skipIf(!url)('against a real redis-server', () => {
    it('createOwnershipStore resolves redis from the stream-bridge env and builds a RedisOwnershipStore', async () => {
      const prefix = uniquePrefix('factory');
      const resolved = resolveOwnershipConfig(undefined, {
        DEER_FLOW_STREAM_BRIDGE_REDIS_URL: url!,
      });
      expect(resolved).toMatchObject({ type: 'redis', redisUrl: url });
      const store = await createOwnershipStore(
        { ...resolved, keyPrefix: prefix, renewalIntervalSeconds: 5, ttlMultiplier: 2 },
        { logger: silentLogger },
      );
      const admin = new Redis(url!);
      try {
        expect(store).toBeInstanceOf(RedisOwnershipStore);
        expect(store.supportsCrossProcess).toBe(true);
        expect(await store.take('vm-1')).toBe(true);
        const ttl = await admin.pttl(`${prefix}:sandbox:owner:vm-1`);
        expect(ttl).toBeGreaterThan(9_000);
        expect(ttl).toBeLessThanOrEqual(10_000);
      } finally {
        await admin.del(`${prefix}:sandbox:owner:vm-1`);
        await admin.quit();
        await store.close();
      }
    });

    it('createCapacityStore builds a RedisCapacityStore on the same URL and prefix', async () => {
      const prefix = uniquePrefix('factory-cap');
      const resolved = resolveOwnershipConfig(undefined, { SBX_OWNERSHIP_REDIS_URL: url! });
      const store = await createCapacityStore({ ...resolved, keyPrefix: prefix }, { hardLimit: 2 });
      try {
        expect(store).toBeInstanceOf(RedisCapacityStore);
        expect((store as RedisCapacityStore).keys.capacityKey).toBe(`${prefix}:e2b-capacity`);
        expect(await store!.revision()).toBe(0);
      } finally {
        await store?.close();
      }
    });
  });
});
