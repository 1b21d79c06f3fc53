import type { SandboxInfo } from './sandbox-info.js';
import type { NetworkPolicy, NetworkPolicySupport, SandboxResources } from '@sbx/core';

/** A host directory mounted into a sandbox. */
export interface MountSpec {
  readonly hostPath: string;
  readonly containerPath: string;
  readonly readOnly: boolean;
}

export interface CreateSandboxRequest {
  readonly sandboxId: string;
  /** Null or absent: an anonymous sandbox. */
  readonly threadId?: string | null;
  readonly userId?: string;
  /** Thread, skills and integration mounts, in priority order. */
  readonly extraMounts?: readonly MountSpec[];
  /** Remote only: whether the user has legacy skills. */
  readonly includeLegacySkills?: boolean;
  readonly provisionLarkCliRuntime?: boolean;
  readonly provisionLarkCliBroker?: boolean;
  /** Local only, from an acquire's spec: the image, resources and labels of this sandbox. */
  readonly image?: string;
  readonly resources?: SandboxResources;
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * The sandbox's effective network policy (the acquire's, else the configured one), already
   * admitted against `networkSupport`. Absent: open egress.
   */
  readonly network?: NetworkPolicy;
  readonly signal?: AbortSignal;
}

export interface BackendCallOptions {
  readonly signal?: AbortSignal;
}

/**
 * The result of a health check. Only a definitive answer that the sandbox is gone (or stopped) is
 * `dead`; a check that could not be made (daemon unreachable, timeout, unexpected answer) is
 * `unknown`, and callers must not treat it as dead (dropping a live sandbox loses the user's
 * session state; keeping a dead one is corrected by the next check).
 */
export type SandboxHealth = 'alive' | 'dead' | 'unknown';

/**
 * Where sandboxes run: local containers (`LocalContainerBackend`) or a remote provisioner
 * (`RemoteSandboxBackend`). A provider holds one backend and never cares which.
 */
export interface SandboxBackend {
  readonly kind: 'local' | 'remote';
  /**
   * Thread user-data directories are bind-mounted into the sandbox by this backend (so uploads on
   * the gateway host are already visible inside). True for local containers.
   */
  readonly usesThreadDataMounts: boolean;
  /**
   * Starts a sandbox named after `sandboxId` and resolves once its API answers
   * `GET /v1/sandbox` (local: within 60 s). A sandbox that never becomes ready is stopped again
   * and the call fails. If one with that id already runs, it is adopted instead.
   */
  create(request: CreateSandboxRequest): Promise<SandboxInfo>;
  /** Stops the sandbox. Already gone is fine; a stop that could not be confirmed throws. */
  destroy(info: SandboxInfo, options?: BackendCallOptions): Promise<void>;
  checkHealth(info: SandboxInfo, options?: BackendCallOptions): Promise<SandboxHealth>;
  /**
   * A running, ready sandbox with this id, or null. Never throws for an unverifiable one: what
   * cannot be verified is not adopted (the caller creates instead).
   */
  discover(sandboxId: string, options?: BackendCallOptions): Promise<SandboxInfo | null>;
  /** Every sandbox of this backend that is running now (reconciliation); `[]` when unknowable. */
  listRunning(options?: BackendCallOptions): Promise<SandboxInfo[]>;
  /**
   * Suspends every process of the sandbox, keeping them and its files (`docker pause`). One
   * already paused is fine. Absent: the backend cannot pause (the provider refuses, typed).
   */
  pause?(info: SandboxInfo, options?: BackendCallOptions): Promise<void>;
  /**
   * Continues a paused sandbox. One not paused is fine: two instances resuming one sandbox at once
   * both succeed. A sandbox that is gone throws.
   */
  unpause?(info: SandboxInfo, options?: BackendCallOptions): Promise<void>;
  /**
   * The network policies this backend enforces, asked of where sandboxes run (a provisioner's
   * capabilities). Absent: none; a restricting policy is refused at acquire.
   */
  networkSupport?(options?: BackendCallOptions): Promise<NetworkPolicySupport>;
}
