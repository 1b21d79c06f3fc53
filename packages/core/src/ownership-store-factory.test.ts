import { describe, expect, it } from 'vitest';
import { createCapacityStore } from './capacity-store-factory.js';
import type { CapacityStore } from './capacity-store.js';
import type { Logger } from './logger.js';
import { MemoryCapacityStore } from './memory-capacity-store.js';
import { MemoryOwnershipStore } from './memory-ownership-store.js';
import { createOwnershipStore, resolveOwnershipStoreOptions } from './ownership-store-factory.js';
import type { OwnershipRedisModule } from './ownership-store-factory.js';
import type { OwnershipStore } from './ownership-store.js';

function capturingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const noop = () => {};
  return { warnings, debug: noop, info: noop, error: noop, warn: (m) => warnings.push(m) };
}

/** Records what core passes to @sbx/ownership-redis and returns stand-in stores. */
function recordingRedisModule() {
  const calls: { ownership: unknown[]; capacity: unknown[] } = { ownership: [], capacity: [] };
  const mod: OwnershipRedisModule = {
    async createRedisOwnershipStore(options) {
      calls.ownership.push(options);
      const store: OwnershipStore = Object.assign(
        new MemoryOwnershipStore({ ownerId: options.ownerId }),
        {
          supportsCrossProcess: true,
        },
      );
      return store;
    },
    async createRedisCapacityStore(options) {
      calls.capacity.push(options);
      const store: CapacityStore = new MemoryCapacityStore({ hardLimit: options.hardLimit });
      return store;
    },
  };
  return { mod, calls };
}

describe('resolveOwnershipStoreOptions', () => {
  it('no config and no env → memory (9.6 #93)', () => {
    expect(resolveOwnershipStoreOptions(undefined, {})).toMatchObject({
      type: 'memory',
      redisUrl: undefined,
      renewalIntervalSeconds: 30,
      ttlMultiplier: 4,
    });
  });

  it('the stream-bridge redis env implies redis ownership with that URL (9.6 #93)', () => {
    const r = resolveOwnershipStoreOptions(undefined, {
      DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://127.0.0.1:7001/2',
    });
    expect(r).toMatchObject({ type: 'redis', redisUrl: 'redis://127.0.0.1:7001/2' });
  });

  it('the ownership env beats the stream-bridge env; SBX_OWNERSHIP_REDIS_URL beats both', () => {
    const env = {
      DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://127.0.0.1:1/0',
      DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL: 'redis://127.0.0.1:2/0',
    };
    expect(resolveOwnershipStoreOptions(undefined, env).redisUrl).toBe('redis://127.0.0.1:2/0');
    expect(
      resolveOwnershipStoreOptions(undefined, {
        ...env,
        SBX_OWNERSHIP_REDIS_URL: 'redis://127.0.0.1:3/0',
      }).redisUrl,
    ).toBe('redis://127.0.0.1:3/0');
  });

  it('an explicit memory type beats the env (9.6 #93)', () => {
    const r = resolveOwnershipStoreOptions(
      { type: 'memory' },
      { SBX_OWNERSHIP_REDIS_URL: 'redis://127.0.0.1:3/0', DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'x' },
    );
    expect(r.type).toBe('memory');
    expect(r.redisUrl).toBeUndefined();
  });

  it('explicit redis takes its URL from config, then the env chain, then REDIS_URL, then localhost', () => {
    expect(
      resolveOwnershipStoreOptions({ type: 'redis', redisUrl: 'redis://127.0.0.1:9/1' }, {})
        .redisUrl,
    ).toBe('redis://127.0.0.1:9/1');
    expect(
      resolveOwnershipStoreOptions(
        { type: 'redis' },
        { DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://127.0.0.1:8/0' },
      ).redisUrl,
    ).toBe('redis://127.0.0.1:8/0');
    expect(
      resolveOwnershipStoreOptions({ type: 'redis' }, { REDIS_URL: 'redis://127.0.0.1:7/0' })
        .redisUrl,
    ).toBe('redis://127.0.0.1:7/0');
    expect(resolveOwnershipStoreOptions({ type: 'redis' }, {}).redisUrl).toBe(
      'redis://localhost:6379/0',
    );
  });

  it('REDIS_URL alone does not imply redis (it may belong to anything)', () => {
    expect(
      resolveOwnershipStoreOptions(undefined, { REDIS_URL: 'redis://127.0.0.1:7/0' }).type,
    ).toBe('memory');
  });

  it('a configured redisUrl without a type implies redis', () => {
    expect(resolveOwnershipStoreOptions({ redisUrl: 'redis://127.0.0.1:5/0' }, {})).toMatchObject({
      type: 'redis',
      redisUrl: 'redis://127.0.0.1:5/0',
    });
  });

  it('blank env values count as unset', () => {
    expect(resolveOwnershipStoreOptions(undefined, { SBX_OWNERSHIP_REDIS_URL: '  ' }).type).toBe(
      'memory',
    );
  });

  it('an unknown type is a ConfigError naming the key (9.6 #90)', () => {
    expect(() => resolveOwnershipStoreOptions({ type: 'etcd' }, {})).toThrow(
      /sandbox\.ownership\.type: Unknown sandbox ownership type: 'etcd'/,
    );
  });
});

describe('createOwnershipStore', () => {
  it('default config builds a memory store and warns that it is single-instance only (9.6 #90)', async () => {
    const logger = capturingLogger();
    const store = await createOwnershipStore(undefined, { env: {}, logger });
    expect(store).toBeInstanceOf(MemoryOwnershipStore);
    expect(store.supportsCrossProcess).toBe(false);
    expect((store as MemoryOwnershipStore).ttlSeconds).toBe(120);
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatch(/single-instance only/);
    await store.close();
  });

  it('applies the configured TTL arithmetic and owner id', async () => {
    const store = await createOwnershipStore(
      { renewalIntervalSeconds: 2, ttlMultiplier: 3 },
      { env: {}, logger: capturingLogger(), ownerId: 'me:1' },
    );
    expect(store.ownerId).toBe('me:1');
    expect((store as MemoryOwnershipStore).ttlSeconds).toBe(6);
  });

  it('rejects a TTL multiplier of 1 before building anything (9.6 #91)', async () => {
    await expect(
      createOwnershipStore({ ttlMultiplier: 1 }, { env: {}, logger: capturingLogger() }),
    ).rejects.toThrow(/ttlMultiplier/);
  });

  it('redis loads @sbx/ownership-redis lazily and passes URL, TTL, prefix and owner id; no warning', async () => {
    const { mod, calls } = recordingRedisModule();
    const logger = capturingLogger();
    const store = await createOwnershipStore(
      { keyPrefix: 'tenant-a', renewalIntervalSeconds: 10, ttlMultiplier: 2 },
      {
        env: { DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL: 'redis://127.0.0.1:6390/3' },
        logger,
        ownerId: 'host:42',
        loadRedisModule: async () => mod,
      },
    );
    expect(calls.ownership).toEqual([
      {
        url: 'redis://127.0.0.1:6390/3',
        ownerId: 'host:42',
        ttlSeconds: 20,
        keyPrefix: 'tenant-a',
        compat: undefined,
        logger,
      },
    ]);
    expect(store.supportsCrossProcess).toBe(true);
    expect(logger.warnings).toEqual([]);
  });

  it('a missing @sbx/ownership-redis surfaces as the loader error (MissingDependencyError)', async () => {
    const err = Object.assign(new Error('missing'), { code: 'MISSING_DEPENDENCY' });
    await expect(
      createOwnershipStore(
        { type: 'redis' },
        { env: {}, logger: capturingLogger(), loadRedisModule: () => Promise.reject(err) },
      ),
    ).rejects.toBe(err);
  });
});

describe('createCapacityStore', () => {
  it('returns no ledger for memory ownership: the limit is per process (8.4 #100)', async () => {
    expect(await createCapacityStore(undefined, { hardLimit: 3, env: {} })).toBeUndefined();
  });

  it('redis ownership gets a ledger from @sbx/ownership-redis with the same URL and prefix (8.4 #100)', async () => {
    const { mod, calls } = recordingRedisModule();
    const store = await createCapacityStore(
      { type: 'redis', redisUrl: 'redis://127.0.0.1:6391/0', keyPrefix: 'p' },
      { hardLimit: 4, env: {}, loadRedisModule: async () => mod },
    );
    expect(store?.hardLimit).toBe(4);
    expect(calls.capacity).toEqual([
      {
        url: 'redis://127.0.0.1:6391/0',
        hardLimit: 4,
        keyPrefix: 'p',
        compat: undefined,
        logger: undefined,
      },
    ]);
  });

  it('rejects a hard limit below 1', async () => {
    await expect(createCapacityStore({ type: 'redis' }, { hardLimit: 0, env: {} })).rejects.toThrow(
      /hardLimit/,
    );
  });
});
