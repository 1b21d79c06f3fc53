import { requireService } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { pingRedis } from './redis-probe.js';

const url = await requireService('redis');

describe.skipIf(!url)('pingRedis against a real Redis', () => {
  it('gets PONG and a round-trip time', async () => {
    const { rttMs } = await pingRedis(url as string, AbortSignal.timeout(5000));
    expect(rttMs).toBeGreaterThanOrEqual(0);
  });
});
