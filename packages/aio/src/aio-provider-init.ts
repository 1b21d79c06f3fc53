import type {
  Clock,
  ListSandboxesOptions,
  Logger,
  OrphanReapReport,
  OwnershipStore,
  Sandbox,
  SandboxConfig,
  SandboxSummary,
} from '@sbx/core';
import type { SandboxBackend } from './sandbox-backend.js';
import type { SandboxInfo } from './sandbox-info.js';

export interface AioSandboxProviderInit {
  readonly config: SandboxConfig;
  readonly logger?: Logger | undefined;
  /** Where sandboxes run. Default: remote when `provisioner_url` is set, else local containers. */
  readonly backend?: SandboxBackend | undefined;
  /** Default: built from `sandbox.ownership` (memory, or Redis via @sbx/ownership-redis). */
  readonly ownershipStore?: OwnershipStore | undefined;
  /** Drives renewal, reconciliation, the idle checker and every timestamp. Default: system clock. */
  readonly clock?: Clock | undefined;
  /**
   * The host application's stream bridge, if it has one: a Redis bridge means a multi-instance
   * deployment, so ownership follows it to Redis (unless `sandbox.ownership` says otherwise).
   */
  readonly streamBridge?: { readonly type?: string; readonly redisUrl?: string } | undefined;
  /** Environment for the ownership and host-base-dir resolution. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
  /** Builds the client of a sandbox. Default: an `AioSandbox` on `info.sandboxUrl`. */
  readonly createClient?: ((info: SandboxInfo) => Sandbox) | undefined;
  /** Whether a new sandbox answers. Default: polls `GET /v1/sandbox` for `ready_timeout_seconds`. */
  readonly readinessProbe?: ((info: SandboxInfo) => Promise<boolean>) | undefined;
  /** Run the start-up reconciliation and the timers. Default true. */
  readonly background?: boolean | undefined;
}

/**
 * One listed container (core's `SandboxSummary`). `state` is `active` / `warm` when this instance
 * tracks it, otherwise the ownership store's view: `owned by <owner>`, `being destroyed by
 * <owner>`, `unowned`, or `owner unknown`; `updatedAt` is the last use of an active sandbox or when
 * a warm one was parked; `location` is the container name, else the sandbox URL.
 */
export type AioSandboxSummary = SandboxSummary;

export type AioListSandboxesOptions = ListSandboxesOptions;

export type AioOrphanReapReport = OrphanReapReport;

/** The in-memory state, for diagnostics and tests. */
export interface AioProviderSnapshot {
  readonly active: readonly string[];
  /** Warm ids, oldest first. */
  readonly warm: readonly string[];
  /** Identity key → sandbox id. */
  readonly threads: Readonly<Record<string, string>>;
}
