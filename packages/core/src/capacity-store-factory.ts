import { assertCapacityHardLimit } from './capacity-store.js';
import type { CapacityStore } from './capacity-store.js';
import type { Logger } from './logger.js';
import {
  DEFAULT_OWNERSHIP_REDIS_URL,
  loadOwnershipRedisModule,
  resolveOwnershipStoreOptions,
} from './ownership-store-factory.js';
import type {
  OwnershipEnv,
  OwnershipOptions,
  OwnershipRedisModule,
} from './ownership-store-factory.js';

export interface CreateCapacityStoreOptions {
  /** The provider's limit: `replicas`, plus `burstLimit` under the `burst` policy. At least 1. */
  hardLimit: number;
  env?: OwnershipEnv;
  logger?: Logger;
  loadRedisModule?: () => Promise<OwnershipRedisModule>;
}

/**
 * The deployment-wide capacity ledger for the configured ownership backend, or `undefined` when
 * ownership is `memory`: then gateways cannot see each other anyway and the limit is enforced per
 * process by the provider alone. Resolution (type, URL, key prefix) is the ownership store's, so the
 * ledger always lives beside the leases (`<keyPrefix>:e2b-capacity`).
 */
export async function createCapacityStore(
  config: OwnershipOptions | undefined,
  options: CreateCapacityStoreOptions,
): Promise<CapacityStore | undefined> {
  assertCapacityHardLimit(options.hardLimit);
  const resolved = resolveOwnershipStoreOptions(config, options.env ?? process.env);
  if (resolved.type === 'memory') return undefined;
  const mod = await (
    options.loadRedisModule ??
    (() => loadOwnershipRedisModule('sbx capacity ledger (ownership type: redis)'))
  )();
  return mod.createRedisCapacityStore({
    url: resolved.redisUrl ?? DEFAULT_OWNERSHIP_REDIS_URL,
    hardLimit: options.hardLimit,
    keyPrefix: resolved.keyPrefix,
    compat: resolved.compat,
    logger: options.logger,
  });
}
