import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireService } from '@sbx/core/testing';

// Proves the Redis test tier is wired end to end: the server from tools/services/start-redis.sh is
// reachable through SBX_REDIS_URL and runs Lua, which the ownership store's scripts depend on.
const redisUrl = await requireService('redis');

describe.skipIf(!redisUrl)('redis test harness', () => {
  let redis: Redis;
  // Keys are unique per run so parallel runs against one server never see each other's state.
  const key = `sbx:test:harness:${randomUUID()}`;

  beforeAll(async () => {
    redis = new Redis(redisUrl!, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
  });

  afterAll(async () => {
    if (!redis) return;
    await redis.del(key);
    await redis.quit();
  });

  it('answers PING', async () => {
    await expect(redis.ping()).resolves.toBe('PONG');
  });

  it('runs a Lua script with keys and arguments (EVAL round trip)', async () => {
    const script = `
      local total = redis.call('INCRBY', KEYS[1], ARGV[1])
      redis.call('PEXPIRE', KEYS[1], 60000)
      return { KEYS[1], ARGV[2], total }
    `;
    await expect(redis.eval(script, 1, key, '5', 'marker')).resolves.toEqual([key, 'marker', 5]);
    await expect(redis.eval(script, 1, key, '7', 'again')).resolves.toEqual([key, 'again', 12]);
    await expect(redis.get(key)).resolves.toBe('12');
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60000);
  });

  it('surfaces a Lua error as a rejected command', async () => {
    await expect(redis.eval("return redis.error_reply('sbx boom')", 0)).rejects.toThrow(/sbx boom/);
  });
});
