import type {
  CheckpointConfig,
  EgressGateway,
  EnvPolicyMode,
  Logger,
  SandboxSpecPolicy,
} from '@sbx/core';
import type { IsolationMode } from './confinement/isolation-mode.js';
import type { ConfinementLimits } from './confinement/cgroup-limits.js';
import type { ConfinementProbe } from './confinement/bwrap-probe.js';
import type { SandboxOwner } from './confinement/sandbox-owner.js';

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
  /** `sandbox.spec` and `sandbox.network`: the configured network policy binds every acquire. */
  readonly specPolicy?: SandboxSpecPolicy;
  /** `sandbox.checkpoint`: the bounds of snapshots (export and restore alike) and their life. */
  readonly checkpoint?: CheckpointConfig;
  /**
   * `sandbox.local` block: `max_cached_threads`, `shell`, `thread_max_age_days`, `isolation`,
   * `sandbox_uid`, `sandbox_gid`.
   */
  readonly local?: Readonly<Record<string, unknown>>;
}

export interface LocalProviderOptions {
  /** Parsed configuration; explicit options below take precedence over it. */
  config?: LocalProviderConfig;
  /** Default: warnings and errors the contract requires go to the console, nothing else. */
  logger?: Logger;
  /** Data directory; default: config `baseDir`, then env `SBX_HOME`, then `./.sbx`. */
  baseDir?: string;
  /**
   * Unconfined host bash: commands run as the gateway's user with no isolation. Explicit opt-in;
   * with `isolation: 'auto'` it wins (the caller asked for the host), with `isolation: 'bwrap'`
   * it is ignored (every command is confined) and a warning says so.
   */
  allowHostBash?: boolean;
  /**
   * How commands run: `bwrap` confined in the thread's namespaces, `none` on the host (only with
   * `allowHostBash`), `auto` (default) confined where bubblewrap works, else bash off. Default:
   * `sandbox.local.isolation`, then `auto`.
   */
  isolation?: IsolationMode;
  /**
   * Host user and group confined commands run as when the gateway is root. Default:
   * `sandbox.local.sandbox_uid` / `sandbox_gid`, then 65534. Ignored when the gateway is not root
   * (commands then run as the gateway's user, inside their own user namespace).
   */
  sandboxUid?: number;
  sandboxGid?: number;
  /** Size of a confined thread's private `/tmp` in bytes. Default: `limits.tmpBytes`. */
  tmpBytes?: number;
  /**
   * The seccomp program (classic BPF, as `bwrap --seccomp` reads it) every confined command
   * gets. Default: the one `@sbx/local` builds for this architecture.
   */
  seccompProgram?: () => Buffer;
  /**
   * Resource limits of each confined thread (its cgroup where the host offers one, rlimits as
   * the floor, the size of its `/tmp`), over `sandbox.local.limits` and the defaults.
   */
  limits?: Partial<ConfinementLimits>;
  /**
   * Whether bubblewrap can confine commands here, as the given host user. Default: the real probe
   * (`probeConfinement`, run once per process); replaceable to describe another host.
   */
  confinementProbe?: (owner: SandboxOwner | undefined) => ConfinementProbe;
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
  /**
   * The egress gateway (`EgressProxyGateway` of `@sbx/egress`) through which confined sandboxes
   * reach the network under their policy: each namespace's only way out is the gateway's socket
   * for that sandbox, through a forwarder at `127.0.0.1:3128` inside it that `HTTP(S)_PROXY`
   * names. Without it a confined sandbox has loopback only, and a policy other than mode `none` or
   * plain open is refused. Ignored (and every restricting policy refused) unconfined.
   */
  egress?: EgressGateway;
  /** Environment consulted for `SBX_HOME`. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}
