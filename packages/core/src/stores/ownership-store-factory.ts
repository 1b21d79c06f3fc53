import type { CapacityStore } from '../capacity/capacity-store.js';
import type { Env } from '../config/config-input.js';
import { resolveOwnershipConfig } from '../config/config-ownership.js';
import type { ResolvedOwnershipConfig } from '../config/config-ownership.js';
import { ConfigError, InvalidArgumentError } from '../errors/errors.js';
import { consoleLogger } from '../logging/logger.js';
import type { Logger } from '../logging/logger.js';
import { MemoryOwnershipStore } from '../ownership/memory-ownership-store.js';
import { loadOptionalDependency } from '../modules/optional-dependency.js';
import { createOwnerId, leaseTtlSeconds } from '../ownership/ownership-store.js';
import type { OwnershipStore } from '../ownership/ownership-store.js';

/** What core needs from `@sbx/ownership-redis`; it is loaded only when a Redis store is chosen. */
export interface OwnershipRedisModule {
  createRedisOwnershipStore(options: {
    url: string;
    ownerId: string;
    ttlSeconds: number;
    keyPrefix?: string;
    compat?: 'deerflow';
    logger?: Logger;
  }): Promise<OwnershipStore>;
  createRedisCapacityStore(options: {
    url: string;
    hardLimit: number;
    keyPrefix?: string;
    compat?: 'deerflow';
    logger?: Logger;
  }): Promise<CapacityStore>;
}

export const OWNERSHIP_REDIS_PACKAGE = '@sbx/ownership-redis';

export function loadOwnershipRedisModule(requiredBy: string): Promise<OwnershipRedisModule> {
  return loadOptionalDependency<OwnershipRedisModule>(OWNERSHIP_REDIS_PACKAGE, requiredBy);
}

export interface OwnershipStoreFactoryOptions {
  /** Used to resolve the configuration when none is passed. Default `process.env`. */
  env?: Env;
  /**
   * `'deerflow'`: the reference implementation's Redis key rule (`<keyPrefix>:<sandboxId>`) for
   * any prefix; see @sbx/ownership-redis. Without it, `keyPrefix: deerflow:sandbox:owner` already
   * yields the reference's default keys.
   */
  compat?: 'deerflow';
  /** Override how `@sbx/ownership-redis` is loaded (tests, bundlers). */
  loadRedisModule?: () => Promise<OwnershipRedisModule>;
}

export interface CreateOwnershipStoreOptions extends OwnershipStoreFactoryOptions {
  /** Receives the single-instance warning. Defaults to the console: the spec requires the warning. */
  logger?: Logger;
  /** Defaults to `createOwnerId()`. */
  ownerId?: string;
}

/**
 * Builds the ownership store for a resolved `sandbox.ownership` (see `resolveOwnershipConfig`;
 * without one, it is resolved from the environment alone). The caller owns the store and must
 * `close()` it. Redis support lives in `@sbx/ownership-redis` (an optional peer), imported only
 * when chosen; a missing package raises `MissingDependencyError` with the install command.
 *
 * Logs a warning when the store cannot see peers (`supportsCrossProcess === false`): on `memory`,
 * several gateway workers have no cross-process coordination at all.
 */
export async function createOwnershipStore(
  ownership?: ResolvedOwnershipConfig,
  options: CreateOwnershipStoreOptions = {},
): Promise<OwnershipStore> {
  const resolved = ownership ?? resolveOwnershipConfig(undefined, options.env ?? process.env);
  assertOwnershipType(resolved.type);
  const logger = options.logger ?? consoleLogger();
  // Recomputed (and validated) rather than trusted: a hand-built config skips the schema.
  const ttlSeconds = leaseTtlSeconds(resolved);
  const ownerId = options.ownerId ?? createOwnerId();
  let store: OwnershipStore;
  if (resolved.type === 'memory') {
    store = new MemoryOwnershipStore({ ownerId, ttlSeconds });
  } else {
    const load =
      options.loadRedisModule ??
      (() => loadOwnershipRedisModule('sbx ownership store (type: redis)'));
    store = await (
      await load()
    ).createRedisOwnershipStore({
      url: redisUrlOf(resolved),
      ownerId,
      ttlSeconds,
      keyPrefix: resolved.keyPrefix,
      compat: options.compat,
      logger: options.logger,
    });
  }
  if (!store.supportsCrossProcess) {
    logger.warn(
      `sandbox ownership store '${resolved.type}' is single-instance only: gateway instances or workers sharing a sandbox backend cannot see each other's leases; configure sandbox.ownership.type: redis for multi-instance deployments`,
      { ownership_type: resolved.type, source: resolved.source, owner_id: store.ownerId },
    );
  }
  return store;
}

/** The schema already restricts the type; this guards hand-built configurations. */
export function assertOwnershipType(type: unknown): asserts type is 'memory' | 'redis' {
  if (type !== 'memory' && type !== 'redis') {
    throw new ConfigError([
      {
        path: 'sandbox.ownership.type',
        message: `Unknown sandbox ownership type: '${String(type)}' (expected 'memory' or 'redis')`,
      },
    ]);
  }
}

export function redisUrlOf(resolved: ResolvedOwnershipConfig): string {
  if (!resolved.redisUrl) {
    // resolveOwnershipConfig always sets it for redis; reaching this means a hand-built config.
    throw new InvalidArgumentError('a redis ownership configuration needs redisUrl');
  }
  return resolved.redisUrl;
}
