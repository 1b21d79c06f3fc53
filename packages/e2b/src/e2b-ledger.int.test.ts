import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { SandboxCapacityExceededError } from '@sbx/core';
import { parseSandboxConfig } from '@sbx/core';
import { requireService } from '@sbx/core/testing';
import { createRedisCapacityStore } from '@sbx/ownership-redis';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { E2BSandboxProvider } from './e2b-sandbox-provider.js';
import { E2B_TAGS } from './metadata.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

const url = await requireService('redis');

describe.skipIf(!url)('§8.4 the deployment-wide ledger on a real Redis', () => {
  let admin: Redis;
  let baseDir: string;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    admin = new Redis(url!);
    baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-ledger-'));
  });
  afterAll(async () => {
    await admin.quit();
    await rm(baseDir, { recursive: true, force: true });
  });
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  function prefix(): string {
    const p = `sbxtest:e2b:${process.pid}:${randomUUID().slice(0, 8)}`;
    cleanups.push(async () => {
      const keys = await admin.keys(`${p}:*`);
      if (keys.length) await admin.del(...keys);
    });
    return p;
  }

  function gateway(fake: FakeE2BClient, keyPrefix: string, extra: Record<string, unknown> = {}) {
    const provider = new E2BSandboxProvider({
      config: parseSandboxConfig({
        use: '@sbx/e2b',
        base_dir: baseDir,
        replicas: 1,
        overflow_policy: 'reject',
        ownership: { type: 'redis', redis_url: url, key_prefix: keyPrefix },
        ...extra,
      }),
      client: fake,
      background: false,
    });
    cleanups.push(() => provider.shutdown());
    return provider;
  }

  function sharedFake(): FakeE2BClient {
    const fake = new FakeE2BClient();
    cleanups.push(() => fake.dispose());
    return fake;
  }

  it('§8.4.100/101 the factory builds the ledger beside the leases; two gateways racing for one slot: one wins', async () => {
    const p = prefix();
    const fake = sharedFake();
    const g1 = gateway(fake, p);
    const g2 = gateway(fake, p);
    // A fresh ledger admits nothing until a complete inventory was applied.
    const early = await g1.acquire({ userId: 'u', threadId: 'early' }).catch((e: unknown) => e);
    expect((early as SandboxCapacityExceededError).reason).toBe('capacity_initializing');
    await g1.reconcileNow();
    const results = await Promise.allSettled([
      g1.acquire({ userId: 'u', threadId: 'a' }),
      g2.acquire({ userId: 'u', threadId: 'b' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(fake.callsOf('create')).toHaveLength(1);
    const id = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<string>)
      .value;
    expect(fake.vms.get(id)!.metadata[E2B_TAGS.capacityLedger]).toBe(`${p}:e2b-capacity`);
    expect(await admin.keys(`${p}:e2b-capacity`)).toEqual([`${p}:e2b-capacity`]);
    const fields = await admin.hgetall(`${p}:e2b-capacity`);
    expect(fields[`s:${id}`]).toBe('1');
    expect(Object.keys(fields).filter((f) => f.startsWith('r:'))).toEqual([]);
  });

  it('§8.4.100 an unreachable Redis makes creates fail closed (capacity_backend)', async () => {
    const fake = sharedFake();
    const provider = new E2BSandboxProvider({
      config: parseSandboxConfig({
        use: '@sbx/e2b',
        base_dir: baseDir,
        ownership: {
          type: 'redis',
          redis_url: 'redis://127.0.0.1:1',
          key_prefix: 'sbxtest:unreachable',
        },
      }),
      client: fake,
      background: false,
    });
    cleanups.push(() => provider.shutdown());
    const err = await provider.acquire({ userId: 'u', threadId: 'a' }).catch((e: unknown) => e);
    expect((err as SandboxCapacityExceededError).reason).toBe('capacity_backend');
    expect(fake.callsOf('create')).toHaveLength(0);
  });

  it('§8.4.102 a complete inventory that missed a just-tracked VM does not free its slot', async () => {
    const p = prefix();
    const fake = sharedFake();
    const g1 = gateway(fake, p);
    await g1.reconcileNow();
    await g1.acquire({ userId: 'u', threadId: 'a' });
    const ledger = await createRedisCapacityStore({ url: url!, keyPrefix: p, hardLimit: 1 });
    cleanups.push(() => ledger.close());
    expect(
      await ledger.reconcile({
        expectedRevision: await ledger.revision(),
        entries: [],
        complete: true,
        maxAgeMs: 120_000,
      }),
    ).toBe(true);
    const g2 = gateway(fake, p);
    const err = await g2.acquire({ userId: 'u', threadId: 'b' }).catch((e: unknown) => e);
    expect((err as SandboxCapacityExceededError).reason).toBe('capacity');
  });

  it('§8.4.103 an inventory repairs a crashed create through the VM’s reservation tag', async () => {
    const p = prefix();
    const fake = sharedFake();
    const ledger = await createRedisCapacityStore({ url: url!, keyPrefix: p, hardLimit: 2 });
    cleanups.push(() => ledger.close());
    await ledger.reconcile({ expectedRevision: 0, entries: [], complete: true, maxAgeMs: 120_000 });
    expect(await ledger.reserve('tok-crashed')).toBe('GRANTED');
    const vm = await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.capacityLedger]: `${p}:e2b-capacity`,
        [E2B_TAGS.capacityReservation]: 'tok-crashed',
      },
    });
    const g = gateway(fake, p, { replicas: 2 });
    await g.reconcileNow();
    const fields = await admin.hgetall(`${p}:e2b-capacity`);
    expect(fields[`s:${vm.sandboxId}`]).toBe('1');
    expect(fields['r:tok-crashed']).toBeUndefined();
  });

  it('§8.4.104 an incomplete inventory (failed listing) removes nothing', async () => {
    const p = prefix();
    const fake = sharedFake();
    const g = gateway(fake, p);
    await g.reconcileNow();
    const id = await g.acquire({ userId: 'u', threadId: 'a' });
    fake.vms.get(id)!.alive = false; // gone from listings, but the listing itself fails
    fake.fail('list', new Error('list down'));
    await g.reconcileNow();
    expect((await admin.hgetall(`${p}:e2b-capacity`))[`s:${id}`]).toBe('1');
  });

  it('§8.4.105 gateways with different limits fail closed with a configuration mismatch', async () => {
    const p = prefix();
    const fake = sharedFake();
    const g1 = gateway(fake, p);
    await g1.reconcileNow();
    const g2 = gateway(fake, p, { replicas: 2 });
    const err = (await g2
      .acquire({ userId: 'u', threadId: 'b' })
      .catch((e: unknown) => e)) as SandboxCapacityExceededError;
    expect(err.reason).toBe('capacity_backend');
    expect(String((err.cause as Error).message)).toContain('configuration mismatch');
    expect(fake.callsOf('create')).toHaveLength(0);
  });

  it('§8.4.106 after initialisation the hash holds exactly the three meta fields', async () => {
    const p = prefix();
    const g = gateway(sharedFake(), p);
    await g.reconcileNow();
    expect(Object.keys(await admin.hgetall(`${p}:e2b-capacity`)).sort()).toEqual([
      'meta:hard_limit',
      'meta:revision',
      'meta:state',
    ]);
  });
});
