import { createCapacityStore, createOwnershipStore } from '@sbx/core';
import type {
  CapacityStore,
  Clock,
  Logger,
  ResolvedOwnershipConfig,
  SandboxProviderEvent,
} from '@sbx/core';
import { OwnershipClient } from '@sbx/core/provider-kit';
import type { E2BSettings } from './e2b-config.js';
import type { Stores } from './e2b-provider-context.js';
import type { E2BProviderInit } from './e2b-provider-init.js';

/**
 * Opens the ownership store (injected, or built from `sandbox.ownership`) and the capacity ledger
 * (injected, none for `null`, else the deployment-wide ledger of a Redis backend), and names the
 * ledger on VMs. A ledger that fails to open closes the ownership store this call built.
 */
export async function openE2BStores(options: {
  readonly init: E2BProviderInit;
  readonly ownership: ResolvedOwnershipConfig;
  readonly settings: E2BSettings;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly emit: (event: SandboxProviderEvent) => void;
}): Promise<Stores> {
  const { init, settings, logger, clock, emit } = options;
  const ownershipConfig = options.ownership;
  const ownsOwnership = init.ownershipStore === undefined;
  const ownership =
    init.ownershipStore ??
    (await createOwnershipStore(ownershipConfig, {
      // Without a host logger, core prints its required single-instance warning to the console.
      logger: init.logger,
      env: init.env ?? process.env,
    }));
  let capacity: CapacityStore | undefined;
  let ownsCapacity = false;
  if (init.capacityStore === null) capacity = undefined;
  else if (init.capacityStore !== undefined) capacity = init.capacityStore;
  else {
    try {
      capacity = await createCapacityStore(ownershipConfig, {
        hardLimit: settings.capacityLimit,
        logger,
        env: init.env ?? process.env,
      });
      ownsCapacity = capacity !== undefined;
    } catch (error) {
      if (ownsOwnership) await ownership.close().catch(() => undefined);
      throw error;
    }
  }
  const ledgerKey =
    capacity === undefined
      ? undefined
      : (init.capacityLedgerKey ?? `${ownershipConfig.keyPrefix.replace(/:+$/, '')}:e2b-capacity`);
  const client = new OwnershipClient({
    store: ownership,
    renewalIntervalMs: ownershipConfig.renewalIntervalSeconds * 1000,
    emit,
    clock,
    logger,
  });
  return { ownership: client, capacity, ledgerKey, ownsOwnership, ownsCapacity };
}
