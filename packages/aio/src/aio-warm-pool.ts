import { WarmPool } from '@sbx/core/provider-kit';
import type { Clock, Logger, WarmEntry, WarmPoolDestroyReason } from '@sbx/core';
import type { AioWarmValue } from './aio-identity.js';
import type { AioSettings } from './aio-provider-config.js';

/** What the warm pool asks of the provider. */
export interface AioWarmPoolHooks {
  /** The warm reaper's stop (expiry, eviction, shutdown); false keeps the entry. */
  destroy(entry: WarmEntry<AioWarmValue>, reason: WarmPoolDestroyReason): Promise<boolean>;
  isActive(id: string): boolean;
  /** The idle pass's first half: active sandboxes idle past `idle_timeout`. */
  onIdleCheck(): Promise<void>;
}

/** The AIO provider's warm pool: parked sandboxes, their expiry and the replica cap. */
export function createAioWarmPool(
  settings: AioSettings,
  clock: Clock,
  logger: Logger,
  hooks: AioWarmPoolHooks,
): WarmPool<AioWarmValue> {
  return new WarmPool<AioWarmValue>({
    destroy: (entry, reason) => hooks.destroy(entry, reason),
    idleTimeoutSeconds: settings.idleTimeoutSeconds,
    checkIntervalSeconds: settings.idleCheckIntervalSeconds,
    replicas: settings.replicas,
    // Active and warm are exclusive; a warm entry for an active id is stale and not the warm
    // reaper's to stop.
    stillReapable: (entry) => !hooks.isActive(entry.id),
    onIdleCheck: () => hooks.onIdleCheck(),
    clock,
    logger,
    name: 'aio',
  });
}
