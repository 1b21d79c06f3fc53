import type { EnvPolicyMode, Logger } from '@sbx/core';

export interface LocalMountConfig {
  readonly hostPath: string;
  readonly containerPath: string;
  readonly readOnly?: boolean;
}

/**
 * The parts of a parsed `sandbox` configuration (`SandboxConfig` of @sbx/core) this provider
 * reads; the provider loader passes the whole configuration as `{ config, logger }`.
 */
export interface LocalProviderConfig {
  readonly allowHostBash?: boolean;
  readonly bashCommandTimeout?: number;
  readonly searchTimeoutSeconds?: number;
  readonly envPolicy?: EnvPolicyMode;
  readonly envAllow?: readonly string[];
  readonly mounts?: readonly LocalMountConfig[];
  readonly skills?: { readonly containerPath?: string };
  readonly baseDir?: string;
  /** `sandbox.local` block: `max_cached_threads`, `shell`, `thread_max_age_days`. */
  readonly local?: Readonly<Record<string, unknown>>;
}

export interface LocalProviderOptions {
  /** Parsed configuration; explicit options below take precedence over it. */
  config?: LocalProviderConfig;
  /** Default: warnings and errors the contract requires go to the console, nothing else. */
  logger?: Logger;
  /** Data directory; default: config `baseDir`, then env `SBX_HOME`, then `./.sbx`. */
  baseDir?: string;
  allowHostBash?: boolean;
  /** Seconds; default 600. */
  bashCommandTimeout?: number;
  /** Wall clock of one grep or glob in seconds. Default: `sandbox.search_timeout_seconds` (10). */
  searchTimeoutSeconds?: number;
  /** Host environment inheritance of commands. Default: `sandbox.env_policy` (`allowlist`). */
  envPolicy?: EnvPolicyMode;
  /** Extra inherited names under the allowlist. Default: `sandbox.env_allow`. */
  envAllow?: readonly string[];
  mounts?: readonly LocalMountConfig[];
  /** Default `/mnt/skills`. */
  skillsContainerPath?: string;
  /** Per-thread sandboxes kept (least recently used evicted). Default 256. */
  maxCachedThreads?: number;
  shell?: string;
  /** User of acquires that name none. Default `default`. */
  defaultUserId?: string;
  /** Environment consulted for `SBX_HOME`. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}
