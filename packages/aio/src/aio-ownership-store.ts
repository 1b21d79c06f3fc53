import { consoleLogger, createOwnershipStore } from '@sbx/core';
import type { OwnershipStore, ResolvedOwnershipConfig } from '@sbx/core';
import type { AioSandboxProviderInit } from './aio-provider-init.js';

/** The injected store (warned about when it is single-instance), else one built from config. */
export function openOwnershipStore(
  init: AioSandboxProviderInit,
  ownership: ResolvedOwnershipConfig,
  env: Readonly<Record<string, string | undefined>>,
): Promise<OwnershipStore> {
  const store = init.ownershipStore;
  if (store === undefined) {
    return createOwnershipStore(ownership, {
      env,
      ...(init.logger ? { logger: init.logger } : {}),
    });
  }
  if (!store.supportsCrossProcess) {
    // The spec requires this warning even from an otherwise silent library.
    (init.logger ?? consoleLogger()).warn(
      'sandbox ownership store is single-instance only: gateway instances or workers sharing a container backend cannot see each other\u2019s leases; configure sandbox.ownership.type: redis for multi-instance deployments',
      { owner_id: store.ownerId },
    );
  }
  return Promise.resolve(store);
}
