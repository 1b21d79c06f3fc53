import { afterEach, describe, expect, it } from 'vitest';
import { pingRedis, redactRedisUrl } from './redis-probe.js';
import { closedPort, startFakeRedis } from './test-support.js';

describe('pingRedis', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  it('times a PING', async () => {
    const redis = await startFakeRedis();
    cleanups.push(redis.close);
    const { rttMs } = await pingRedis(redis.url, AbortSignal.timeout(30_000));
    expect(rttMs).toBeGreaterThanOrEqual(0);
    expect(redis.commands).toEqual([['PING']]);
  });

  it('authenticates with the user and password of the URL', async () => {
    const redis = await startFakeRedis({ password: 'p@ss' });
    cleanups.push(redis.close);
    const url = redis.url.replace('redis://', 'redis://ops:p%40ss@');
    await pingRedis(url, AbortSignal.timeout(30_000));
    expect(redis.commands).toEqual([['AUTH', 'ops', 'p@ss'], ['PING']]);
  });

  it("reports the server's refusal", async () => {
    const redis = await startFakeRedis({ password: 'right' });
    cleanups.push(redis.close);
    const wrong = redis.url.replace('redis://', 'redis://:wrong@');
    await expect(pingRedis(wrong, AbortSignal.timeout(30_000))).rejects.toThrow(
      /AUTH failed: WRONGPASS/,
    );
    await expect(pingRedis(redis.url, AbortSignal.timeout(30_000))).rejects.toThrow(
      /PING failed: NOAUTH/,
    );
  });

  it('fails on a closed port and on an aborted signal', async () => {
    const port = await closedPort();
    await expect(
      pingRedis(`redis://127.0.0.1:${port}`, AbortSignal.timeout(30_000)),
    ).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    const redis = await startFakeRedis();
    cleanups.push(redis.close);
    await expect(pingRedis(redis.url, AbortSignal.abort())).rejects.toThrow('timed out');
  });

  it('rejects other schemes and hides passwords when shown', async () => {
    await expect(pingRedis('http://127.0.0.1:1', AbortSignal.timeout(1000))).rejects.toThrow(
      /not a redis/,
    );
    expect(redactRedisUrl('redis://u:secret@127.0.0.1:6379/0')).toBe(
      'redis://u:***@127.0.0.1:6379/0',
    );
  });
});
