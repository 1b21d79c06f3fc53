import type { Logger } from '../logging/logger.js';
import type { Sandbox } from '../contract/sandbox.js';
import type { AcquireOptions, AgentSkillPolicy } from '../contract/sandbox-provider.js';
import type { SandboxSpec } from '../contract/sandbox-spec.js';

// The option, identity and snapshot shapes of the execution-lease manager.

/**
 * The slice of a provider the lease manager drives. Any `SandboxProvider` fits; so does a
 * duck-typed object (there is no requirement to extend the class, and `admit` is optional).
 */
export interface LeaseProvider {
  acquire(options?: AcquireOptions): Promise<string>;
  get(sandboxId: string): Sandbox | undefined;
  release(sandboxId: string): Promise<void>;
  admit?(options?: AcquireOptions): void;
}

/** The (user, thread) a lease belongs to. An owner never changes it. */
export interface LeaseIdentity {
  threadId: string;
  userId?: string | undefined;
}

export interface LeaseAcquireOptions extends LeaseIdentity {
  /**
   * Default true: a normal owner, whose release asks for the sandbox to be parked once the last
   * holder leaves. False: a borrower (fork-restored child, upload sync) that fences the client
   * and cleans its own scope but never asks for a park.
   */
  releaseOnLast?: boolean;
  /** Passed to `provider.admit` and `provider.acquire`. */
  skillPolicy?: AgentSkillPolicy;
  /** Passed to `provider.admit` and `provider.acquire` (see `AcquireOptions.spec`). */
  spec?: SandboxSpec;
  /** Abandons the wait for the thread's lock; once a provider acquire started, see `acquire`. */
  signal?: AbortSignal;
}

export type LeaseRetainOptions = Omit<LeaseAcquireOptions, 'skillPolicy'>;

export interface LeaseReuseOptions extends LeaseAcquireOptions {
  /** How to bind a replacement acquired because the requested sandbox is gone. Default true. */
  acquireReleaseOnLast?: boolean;
}

export interface LeaseReleaseOptions {
  /** Cannot interrupt the release; an abort is reported (as `AbortedError`) after it completed. */
  signal?: AbortSignal;
}

export interface SandboxLeaseManagerOptions {
  logger?: Logger;
}

export interface LeaseBindingSnapshot {
  readonly sandboxId: string;
  readonly userId: string | undefined;
  readonly threadId: string;
  readonly releaseOnLast: boolean;
}

export interface LeaseManagerSnapshot {
  readonly bindings: Readonly<Record<string, LeaseBindingSnapshot>>;
  /** Sandbox id → its holders, sorted. Only non-empty sets appear. */
  readonly holders: Readonly<Record<string, readonly string[]>>;
  /** Sandbox ids whose park waits for their last holder, sorted. */
  readonly pending: readonly string[];
}

/** Held while a provider tears an idle sandbox down; see `tryReserveIdleTeardown`. */
export interface IdleTeardownReservation {
  readonly sandboxId: string;
  /** Idempotent. */
  release(): void;
}
