import { assertCapacityHardLimit } from '../capacity/capacity-store.js';
import type { CapacityStore } from '../capacity/capacity-store.js';
import { resolveOwnershipConfig } from '../config/config-ownership.js';
import type { ResolvedOwnershipConfig } from '../config/config-ownership.js';
import type { Logger } from '../logging/logger.js';
import {
  assertOwnershipType,
  loadOwnershipRedisModule,
  redisUrlOf,
} from './ownership-store-factory.js';
import type { OwnershipStoreFactoryOptions } from './ownership-store-factory.js';

export interface CreateCapacityStoreOptions extends OwnershipStoreFactoryOptions {
  /** The provider's limit: `replicas`, plus `burstLimit` under the `burst` policy. At least 1. */
  hardLimit: number;
  logger?: Logger;
}

/**
 * The deployment-wide capacity ledger for the resolved ownership backend, or `undefined` when
 * ownership is `memory`: gateways cannot see each other then, and the provider enforces the limit
 * per process alone. The ledger always lives beside the leases (`<keyPrefix>:e2b-capacity`, same
 * URL), so one `sandbox.ownership` section configures both.
 */
export async function createCapacityStore(
  ownership: ResolvedOwnershipConfig | undefined,
  options: CreateCapacityStoreOptions,
): Promise<CapacityStore | undefined> {
  assertCapacityHardLimit(options.hardLimit);
  const resolved = ownership ?? resolveOwnershipConfig(undefined, options.env ?? process.env);
  assertOwnershipType(resolved.type);
  if (resolved.type === 'memory') return undefined;
  const load =
    options.loadRedisModule ??
    (() => loadOwnershipRedisModule('sbx capacity ledger (ownership type: redis)'));
  return (await load()).createRedisCapacityStore({
    url: redisUrlOf(resolved),
    hardLimit: options.hardLimit,
    keyPrefix: resolved.keyPrefix,
    compat: options.compat,
    logger: options.logger,
  });
}
