import type { CapacityStore } from './capacity-store.js';
import { ConfigError } from './errors.js';
import { consoleLogger } from './logger.js';
import type { Logger } from './logger.js';
import { MemoryOwnershipStore } from './memory-ownership-store.js';
import { loadOptionalDependency } from './optional-dependency.js';
import {
  DEFAULT_RENEWAL_INTERVAL_SECONDS,
  DEFAULT_TTL_MULTIPLIER,
  createOwnerId,
  leaseTtlSeconds,
} from './ownership-store.js';
import type { OwnershipStore } from './ownership-store.js';

export type OwnershipStoreType = 'memory' | 'redis';

/** `sandbox.ownership` as the stores need it (camelCase; every field optional). */
export interface OwnershipOptions {
  type?: string;
  redisUrl?: string | null;
  renewalIntervalSeconds?: number;
  ttlMultiplier?: number;
  /** Key namespace in Redis. Default `sbx`, or `deerflow:sandbox:owner` with `compat: 'deerflow'`. */
  keyPrefix?: string;
  /** `'deerflow'`: use the reference implementation's exact Redis key names (see @sbx/ownership-redis). */
  compat?: 'deerflow';
}

export interface ResolvedOwnershipOptions {
  type: OwnershipStoreType;
  /** Set for `redis`: the first of config, env chain, `redis://localhost:6379/0`. */
  redisUrl: string | undefined;
  renewalIntervalSeconds: number;
  ttlMultiplier: number;
  keyPrefix: string | undefined;
  compat: 'deerflow' | undefined;
  /** Why this type was chosen, for the start-up log line. */
  reason: string;
}

export type OwnershipEnv = Readonly<Record<string, string | undefined>>;

/** sbx's own escape hatch: set → redis ownership with this URL. */
export const SBX_OWNERSHIP_REDIS_URL_ENV = 'SBX_OWNERSHIP_REDIS_URL';
/**
 * The reference implementation's names, honoured so a deployment already configured for it (in
 * particular one whose stream bridge runs on Redis, i.e. every multi-instance one) gets a shared
 * store without extra configuration.
 */
export const REFERENCE_OWNERSHIP_REDIS_URL_ENVS = [
  'DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL',
  'DEER_FLOW_STREAM_BRIDGE_REDIS_URL',
] as const;
export const DEFAULT_OWNERSHIP_REDIS_URL = 'redis://localhost:6379/0';

const URL_ENV_CHAIN = [SBX_OWNERSHIP_REDIS_URL_ENV, ...REFERENCE_OWNERSHIP_REDIS_URL_ENVS];

function firstSet(env: OwnershipEnv, names: readonly string[]): [string, string] | undefined {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') return [name, value.trim()];
  }
  return undefined;
}

/**
 * Decides the store type and Redis URL. Order: an explicit `type` in the configuration (an explicit
 * `memory` beats any environment variable) > a configured `redisUrl` without a type (implies redis:
 * a URL nobody uses would be a silent misconfiguration) > `SBX_OWNERSHIP_REDIS_URL` >
 * `DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL` / `DEER_FLOW_STREAM_BRIDGE_REDIS_URL` > memory.
 */
export function resolveOwnershipStoreOptions(
  config: OwnershipOptions | undefined,
  env: OwnershipEnv = process.env,
): ResolvedOwnershipOptions {
  const c = config ?? {};
  const renewalIntervalSeconds = c.renewalIntervalSeconds ?? DEFAULT_RENEWAL_INTERVAL_SECONDS;
  const ttlMultiplier = c.ttlMultiplier ?? DEFAULT_TTL_MULTIPLIER;
  const configuredUrl = c.redisUrl?.trim() || undefined;
  let type: OwnershipStoreType;
  let reason: string;
  if (c.type !== undefined) {
    if (c.type !== 'memory' && c.type !== 'redis') {
      throw new ConfigError([
        {
          path: 'sandbox.ownership.type',
          message: `Unknown sandbox ownership type: '${c.type}' (expected 'memory' or 'redis')`,
        },
      ]);
    }
    type = c.type;
    reason = 'sandbox.ownership.type';
  } else if (configuredUrl) {
    type = 'redis';
    reason = 'sandbox.ownership.redis_url';
  } else {
    const fromEnv = firstSet(env, URL_ENV_CHAIN);
    type = fromEnv ? 'redis' : 'memory';
    reason = fromEnv ? `env ${fromEnv[0]}` : 'default';
  }
  let redisUrl: string | undefined;
  if (type === 'redis') {
    redisUrl =
      configuredUrl ??
      firstSet(env, [...URL_ENV_CHAIN, 'REDIS_URL'])?.[1] ??
      DEFAULT_OWNERSHIP_REDIS_URL;
  }
  return {
    type,
    redisUrl,
    renewalIntervalSeconds,
    ttlMultiplier,
    keyPrefix: c.keyPrefix,
    compat: c.compat,
    reason,
  };
}

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

export interface CreateOwnershipStoreOptions {
  env?: OwnershipEnv;
  /** Receives the single-instance warning. Defaults to the console: the spec requires the warning. */
  logger?: Logger;
  /** Defaults to `createOwnerId()`. */
  ownerId?: string;
  /** Override how `@sbx/ownership-redis` is loaded (tests, bundlers). */
  loadRedisModule?: () => Promise<OwnershipRedisModule>;
}

/**
 * Builds the configured ownership store. The caller owns the store and must `close()` it. Redis
 * support lives in `@sbx/ownership-redis` (an optional peer), imported only when chosen; a missing
 * package raises `MissingDependencyError` with the install command.
 *
 * Logs a warning when the store cannot see peers (`supportsCrossProcess === false`): on `memory`,
 * several gateway workers have no cross-process coordination at all.
 */
export async function createOwnershipStore(
  config?: OwnershipOptions,
  options: CreateOwnershipStoreOptions = {},
): Promise<OwnershipStore> {
  const resolved = resolveOwnershipStoreOptions(config, options.env ?? process.env);
  const logger = options.logger ?? consoleLogger();
  const ttlSeconds = leaseTtlSeconds(resolved);
  const ownerId = options.ownerId ?? createOwnerId();
  let store: OwnershipStore;
  if (resolved.type === 'memory') {
    store = new MemoryOwnershipStore({ ownerId, ttlSeconds });
  } else {
    const mod = await (
      options.loadRedisModule ??
      (() => loadOwnershipRedisModule('sbx ownership store (type: redis)'))
    )();
    store = await mod.createRedisOwnershipStore({
      url: resolved.redisUrl ?? DEFAULT_OWNERSHIP_REDIS_URL,
      ownerId,
      ttlSeconds,
      keyPrefix: resolved.keyPrefix,
      compat: resolved.compat,
      logger: options.logger,
    });
  }
  if (!store.supportsCrossProcess) {
    logger.warn(
      `sandbox ownership store '${resolved.type}' is single-instance only: gateway instances or workers sharing a sandbox backend cannot see each other's leases; configure sandbox.ownership.type: redis for multi-instance deployments`,
      { ownership_type: resolved.type, reason: resolved.reason, owner_id: store.ownerId },
    );
  }
  return store;
}
