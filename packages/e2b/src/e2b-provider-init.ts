import type { CapacityStore, Clock, Logger, OwnershipStore, SandboxConfig } from '@sbx/core';
import type { E2BClient } from './e2b-client.js';

export interface E2BProviderInit {
  readonly config: SandboxConfig;
  readonly logger?: Logger | undefined;
  /** The E2B port; default the real SDK (`SdkE2BClient`) with the configured connection. */
  readonly client?: E2BClient | undefined;
  /** Default: built from `sandbox.ownership` (memory, or Redis via @sbx/ownership-redis). */
  readonly ownershipStore?: OwnershipStore | undefined;
  /**
   * Default: the deployment-wide ledger for a Redis ownership backend, none for memory. Pass
   * `null` to force the per-process limit.
   */
  readonly capacityStore?: CapacityStore | null | undefined;
  /** Tag value naming the ledger on VMs; default `<ownership key prefix>:e2b-capacity`. */
  readonly capacityLedgerKey?: string | undefined;
  /** Drives timeouts, renewal, reconciliation and the warm-pool idle checker. */
  readonly clock?: Clock | undefined;
  /** Start the startup reconciliation pass and the timers. Default true. */
  readonly background?: boolean | undefined;
  /** Environment for resolving the ownership configuration. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
}

/** Local capacity accounting, for diagnostics and tests. */
export interface E2BCapacitySnapshot {
  limit: number;
  active: number;
  warm: number;
  reserved: number;
  transitioning: number;
  tombstones: number;
  total: number;
}
