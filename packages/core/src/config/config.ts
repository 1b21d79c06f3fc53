import type { EnvPolicyMode } from './env-policy.js';
import type { SandboxSpecPolicy } from '../contract/sandbox-spec.js';
/**
 * The parsed `sandbox:` configuration as TypeScript sees it (camelCase). Users write the
 * snake_case layout described in docs/configuration.md; `parseSandboxConfig` / `loadSandboxConfig`
 * validate it and produce these frozen objects.
 */

export const OVERFLOW_POLICIES = ['wait', 'reject', 'burst'] as const;
export type OverflowPolicy = (typeof OVERFLOW_POLICIES)[number];

export const OWNERSHIP_TYPES = ['memory', 'redis'] as const;
export type OwnershipType = (typeof OWNERSHIP_TYPES)[number];

/**
 * Config keys of the provider-specific blocks (`sandbox.e2b`, ...). Their contents are open
 * records validated by the provider package, passed through with their snake_case keys.
 */
export const PROVIDER_BLOCK_KEYS = [
  'local',
  'aio',
  'e2b',
  'boxlite',
  'tenki',
  'opensandbox',
  'provisioner',
  'provider_options',
] as const;
export type ProviderBlockKey = (typeof PROVIDER_BLOCK_KEYS)[number];

/** An open record carried for another package to validate (keys stay as written). */
export type OpenConfigBlock = Readonly<Record<string, unknown>>;

/** `sandbox.ownership`: where cross-instance container ownership leases live. */
export interface OwnershipConfig {
  readonly type: OwnershipType;
  /** Only meaningful for `redis`; when absent the URL comes from the environment (see resolveOwnershipConfig). */
  readonly redisUrl: string | undefined;
  readonly renewalIntervalSeconds: number;
  readonly ttlMultiplier: number;
  readonly keyPrefix: string;
}

export interface VolumeMountConfig {
  readonly hostPath: string;
  readonly containerPath: string;
  readonly readOnly: boolean;
}

export interface SkillsConfig {
  /** Where skills appear inside the sandbox; a provider-startup snapshot. */
  readonly containerPath: string;
  /** Host directory holding the raw skills, when the host application keeps them elsewhere. */
  readonly path: string | undefined;
}

export interface ReadBeforeWriteConfig {
  readonly enabled: boolean;
}

export interface ToolLimitConfig {
  readonly maxResults: number;
}

export interface ToolsConfig {
  readonly glob: ToolLimitConfig;
  readonly grep: ToolLimitConfig;
  /** bash's yield mode and the process tools (`sandbox.tools.process_tools`). Default false. */
  readonly processTools: boolean;
}

export interface WarmPoolConfig {
  /** How often released (warm) sandboxes are checked against `idleTimeout`. */
  readonly idleCheckIntervalSeconds: number;
}

export interface SandboxConfig {
  /** Provider specifier: npm package with optional `#ExportName`. */
  readonly use: string;
  readonly allowHostBash: boolean;
  readonly image: string | undefined;
  readonly port: number | undefined;
  readonly replicas: number | undefined;
  readonly overflowPolicy: OverflowPolicy;
  readonly acquireTimeout: number;
  readonly burstLimit: number;
  readonly containerPrefix: string | undefined;
  readonly idleTimeout: number | undefined;
  readonly healthCheckSkipSeconds: number | undefined;
  /** `undefined` when the section was omitted: resolveOwnershipConfig may then infer redis. */
  readonly ownership: OwnershipConfig | undefined;
  readonly warmPool: WarmPoolConfig;
  /** `sandbox.checkpoint`: the bounds of workspace checkpoints and the life of snapshots. */
  readonly checkpoint?: CheckpointConfig;
  /** `sandbox.spec`: what a per-acquire spec may ask for. */
  readonly specPolicy: SandboxSpecPolicy;
  readonly mounts: readonly VolumeMountConfig[];
  readonly threadDataMounts: boolean | undefined;
  /** Container environment with `$NAME` values already read from the host environment. */
  readonly environment: Readonly<Record<string, string>>;
  readonly bashOutputMaxChars: number;
  readonly readFileOutputMaxChars: number;
  readonly lsOutputMaxChars: number;
  readonly bashCommandTimeout: number;
  /** Wall clock of one grep or glob, in seconds (`search_timeout_seconds`, default 10). */
  readonly searchTimeoutSeconds: number;
  /** Host environment inheritance of commands (`env_policy`, default `allowlist`). */
  readonly envPolicy: EnvPolicyMode;
  /** Extra names the allowlist policy inherits (`env_allow`). */
  readonly envAllow: readonly string[];
  readonly provisionerUrl: string | undefined;
  readonly provisionerApiKey: string | undefined;
  readonly skills: SkillsConfig;
  readonly readBeforeWrite: ReadBeforeWriteConfig;
  /** Absolute data directory (config `base_dir`, else env `SBX_HOME`, else `./.sbx`). */
  readonly baseDir: string;
  readonly tools: ToolsConfig;
  /** Validated by @sbx/authz; core only carries it. */
  readonly authorization: OpenConfigBlock | undefined;
  readonly local: OpenConfigBlock | undefined;
  readonly aio: OpenConfigBlock | undefined;
  readonly e2b: OpenConfigBlock | undefined;
  readonly boxlite: OpenConfigBlock | undefined;
  readonly tenki: OpenConfigBlock | undefined;
  readonly opensandbox: OpenConfigBlock | undefined;
  /** Settings of `sbx provisioner`, validated by @sbx/provisioner (gateways ignore it). */
  readonly provisioner: OpenConfigBlock | undefined;
  /** Block for a third-party provider package named by `use`. */
  readonly providerOptions: OpenConfigBlock | undefined;
}

/** Today's checkpoint bounds: 1 GiB of file bytes, 100 000 entries. */
export const DEFAULT_CHECKPOINT_MAX_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_CHECKPOINT_MAX_ENTRIES = 100_000;
/** Ceilings of the keys: a larger value is a typo, not a checkpoint a gateway should stream. */
export const MAX_CHECKPOINT_BYTES = 1024 * 1024 * 1024 * 1024;
export const MAX_CHECKPOINT_ENTRIES = 10_000_000;
export const MAX_SNAPSHOT_TTL_SECONDS = 10 * 365 * 24 * 3600;

export interface CheckpointConfig {
  /** The sum of a checkpoint's file sizes, and the largest file (`CheckpointLimits`). */
  readonly maxTotalBytes: number;
  readonly maxEntries: number;
  /** 0: snapshots do not expire. */
  readonly snapshotTtlSeconds: number;
}
