import { describe, expect, it } from 'vitest';
import { createCapacityStore } from './capacity-store-factory.js';
import type { CapacityStore } from '../capacity/capacity-store.js';
import { resolveOwnershipConfig } from '../config/config-ownership.js';
import type { ResolvedOwnershipConfig } from '../config/config-ownership.js';
import type { Logger } from '../logging/logger.js';
import { MemoryCapacityStore } from '../capacity/memory-capacity-store.js';
import { MemoryOwnershipStore } from '../ownership/memory-ownership-store.js';
import { createOwnershipStore } from './ownership-store-factory.js';
import type { OwnershipRedisModule } from './ownership-store-factory.js';
import type { OwnershipStore } from '../ownership/ownership-store.js';

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
        { supportsCrossProcess: true },
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

function redisConfig(overrides: Partial<ResolvedOwnershipConfig> = {}): ResolvedOwnershipConfig {
  return {
    ...resolveOwnershipConfig(undefined, { SBX_OWNERSHIP_REDIS_URL: 'redis://127.0.0.1:6390/3' }),
    ...overrides,
  };
}

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
    const resolved = {
      ...resolveOwnershipConfig(undefined, {}),
      renewalIntervalSeconds: 2,
      ttlMultiplier: 3,
    };
    const store = await createOwnershipStore(resolved, {
      logger: capturingLogger(),
      ownerId: 'me:1',
    });
    expect(store.ownerId).toBe('me:1');
    expect((store as MemoryOwnershipStore).ttlSeconds).toBe(6);
  });

  it('rejects a hand-built TTL multiplier of 1 before building anything (9.6 #91)', async () => {
    const resolved = { ...resolveOwnershipConfig(undefined, {}), ttlMultiplier: 1 };
    await expect(createOwnershipStore(resolved, { logger: capturingLogger() })).rejects.toThrow(
      /ttlMultiplier/,
    );
  });

  it('the stream-bridge env implies redis: @sbx/ownership-redis is loaded lazily with URL, TTL, prefix and owner id; no warning (9.6 #93)', async () => {
    const { mod, calls } = recordingRedisModule();
    const logger = capturingLogger();
    const store = await createOwnershipStore(undefined, {
      env: { DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://127.0.0.1:6390/3' },
      logger,
      ownerId: 'host:42',
      loadRedisModule: async () => mod,
    });
    expect(calls.ownership).toEqual([
      {
        url: 'redis://127.0.0.1:6390/3',
        ownerId: 'host:42',
        ttlSeconds: 120,
        keyPrefix: 'sbx',
        compat: undefined,
        logger,
      },
    ]);
    expect(store.supportsCrossProcess).toBe(true);
    expect(logger.warnings).toEqual([]);
  });

  it('passes a resolved redis config and the compat mode through', async () => {
    const { mod, calls } = recordingRedisModule();
    await createOwnershipStore(
      redisConfig({ keyPrefix: 'myapp', renewalIntervalSeconds: 10, ttlMultiplier: 2 }),
      {
        logger: capturingLogger(),
        ownerId: 'h:1',
        compat: 'deerflow',
        loadRedisModule: async () => mod,
      },
    );
    expect(calls.ownership[0]).toMatchObject({
      url: 'redis://127.0.0.1:6390/3',
      ttlSeconds: 20,
      keyPrefix: 'myapp',
      compat: 'deerflow',
    });
  });

  it('a missing @sbx/ownership-redis surfaces as the loader error (MissingDependencyError)', async () => {
    const err = Object.assign(new Error('missing'), { code: 'MISSING_DEPENDENCY' });
    await expect(
      createOwnershipStore(redisConfig(), {
        logger: capturingLogger(),
        loadRedisModule: () => Promise.reject(err),
      }),
    ).rejects.toBe(err);
  });

  it('an unknown type is a ConfigError naming the key, never a silent redis (9.6 #90)', async () => {
    const bogus = {
      ...resolveOwnershipConfig(undefined, {}),
      type: 'etcd',
    } as unknown as ResolvedOwnershipConfig;
    await expect(createOwnershipStore(bogus, { logger: capturingLogger() })).rejects.toThrow(
      /sandbox\.ownership\.type: Unknown sandbox ownership type: 'etcd'/,
    );
    await expect(createCapacityStore(bogus, { hardLimit: 1 })).rejects.toThrow(
      /Unknown sandbox ownership type/,
    );
  });

  it('a hand-built redis config without a URL is rejected', async () => {
    const { mod } = recordingRedisModule();
    await expect(
      createOwnershipStore(redisConfig({ redisUrl: undefined }), {
        logger: capturingLogger(),
        loadRedisModule: async () => mod,
      }),
    ).rejects.toThrow(/redisUrl/);
  });
});

describe('createCapacityStore', () => {
  it('returns no ledger for memory ownership: the limit is per process (8.4 #100)', async () => {
    expect(await createCapacityStore(undefined, { hardLimit: 3, env: {} })).toBeUndefined();
  });

  it('redis ownership gets a ledger from @sbx/ownership-redis with the same URL and prefix (8.4 #100)', async () => {
    const { mod, calls } = recordingRedisModule();
    const store = await createCapacityStore(redisConfig({ keyPrefix: 'p' }), {
      hardLimit: 4,
      loadRedisModule: async () => mod,
    });
    expect(store?.hardLimit).toBe(4);
    expect(calls.capacity).toEqual([
      {
        url: 'redis://127.0.0.1:6390/3',
        hardLimit: 4,
        keyPrefix: 'p',
        compat: undefined,
        logger: undefined,
      },
    ]);
  });

  it('rejects a hard limit below 1', async () => {
    await expect(createCapacityStore(redisConfig(), { hardLimit: 0 })).rejects.toThrow(/hardLimit/);
    // Memory ownership builds no ledger, but a bad limit is still a configuration error.
    await expect(createCapacityStore(undefined, { hardLimit: 0, env: {} })).rejects.toThrow(
      /hardLimit/,
    );
  });
});
