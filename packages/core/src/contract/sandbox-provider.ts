import { CapabilityNotSupportedError } from '../errors/capability-errors.js';
import { InvalidArgumentError, SandboxRuntimeError } from '../errors/errors.js';
import { assertValidThreadIdentity } from '../identity/thread-id-rules.js';
import type { Sandbox } from './sandbox.js';
import {
  NO_LIFECYCLE_SUPPORT,
  type SandboxLifecycleSupport,
  type SnapshotRef,
} from './sandbox-lifecycle.js';
import {
  DEFAULT_SPEC_POLICY,
  NO_SPEC_SUPPORT,
  checkSandboxSpec,
  type SandboxSpec,
  type SandboxSpecPolicy,
  type SandboxSpecSupport,
} from './sandbox-spec.js';

/** An explicit skill policy of a lead agent: the skills it may see, by name (empty = none). */
export interface AgentSkillPolicy {
  readonly allowedSkills: readonly string[];
}

/**
 * The skills a sandbox shows at the skills root: the shared categories (`shared`), or the thread's
 * projection made for a run under an explicit skill policy (`policy`).
 */
export type SkillsView = 'shared' | 'policy';

export interface AcquireOptions {
  userId?: string;
  /** Absent: an anonymous sandbox (legacy/generic), never serialized per thread. */
  threadId?: string;
  /** Present when the lead agent runs under an explicit skill policy. */
  skillPolicy?: AgentSkillPolicy;
  /**
   * What this acquire asks of its sandbox (image, resources, timeout, labels), within
   * `sandbox.spec`. A field the provider cannot honour (see `specSupport`) is refused with
   * `SandboxSpecError`, never dropped.
   */
  spec?: SandboxSpec;
  /**
   * Start the thread's sandbox from this snapshot (see `snapshot`): its thread data is restored
   * before first use. Needs a thread that has no data yet; refused with
   * `CapabilityNotSupportedError` by a provider without `lifecycleSupport.snapshot`.
   */
  fromSnapshot?: SnapshotRef;
  signal?: AbortSignal;
}

/** One category of a thread's skill projection, as prepared on the gateway host. */
export interface SkillProjectionCategory {
  readonly category: 'public' | 'custom' | 'legacy' | 'integrations';
  /** Host directory holding this category's projected skills. */
  readonly hostDir: string;
}

export interface SyncAgentSkillsOptions {
  userId?: string;
  threadId: string;
  projection: readonly SkillProjectionCategory[];
  /** Signature of the projection, written beside the managed categories. */
  signature: string;
  signal?: AbortSignal;
}

/**
 * Lifecycle of sandboxes. `get` is the one synchronous member: it is called on every tool call and
 * must be a pure in-memory lookup (no store, network or disk I/O).
 */
export abstract class SandboxProvider {
  abstract acquire(options?: AcquireOptions): Promise<string>;

  /** The spec fields this provider honours (capability flags); default none. */
  get specSupport(): SandboxSpecSupport {
    return NO_SPEC_SUPPORT;
  }

  abstract get(sandboxId: string): Sandbox | undefined;

  /** End-of-turn release; the provider decides what it means (no-op, park in a warm pool, ...). */
  abstract release(sandboxId: string): Promise<void>;

  /** Clears state that must not survive replacing this provider. Default: nothing. */
  async reset(): Promise<void> {}

  /** Full teardown. Default: nothing. */
  async shutdown(): Promise<void> {}

  /** Which of pause/resume and snapshot/fromSnapshot this provider offers; default none. */
  get lifecycleSupport(): SandboxLifecycleSupport {
    return NO_LIFECYCLE_SUPPORT;
  }

  /** Suspends `sandboxId` with its processes kept. Default: refused (`lifecycleSupport.pause`). */
  async pause(_sandboxId: string): Promise<void> {
    throw CapabilityNotSupportedError.lifecycle(this.constructor.name, 'pause');
  }

  /** Continues a paused `sandboxId`. Default: refused (`lifecycleSupport.pause`). */
  async resume(_sandboxId: string): Promise<void> {
    throw CapabilityNotSupportedError.lifecycle(this.constructor.name, 'resume');
  }

  /**
   * Records `sandboxId`'s thread data so `acquire({ fromSnapshot })` can start another thread
   * from it (a fork) or this one again. Default: refused (`lifecycleSupport.snapshot`).
   */
  async snapshot(_sandboxId: string): Promise<SnapshotRef> {
    throw CapabilityNotSupportedError.lifecycle(this.constructor.name, 'snapshot');
  }

  /** Thread user-data directories are already visible inside the sandbox (no upload sync needed). */
  get usesThreadDataMounts(): boolean {
    return false;
  }

  /** Uploaded files need their permissions widened for a sandbox running as another uid. */
  get needsUploadPermissionAdjustment(): boolean {
    return true;
  }

  /** The provider can enforce an explicit agent skill policy over every tool the agent can reach. */
  get supportsAgentSkillIsolation(): boolean {
    return false;
  }

  /**
   * Whether `sandboxId` is a sandbox this provider holds for `identity`'s (user, thread). The tool
   * layer asks before reusing a persisted id: ids come back from checkpoints and callers, and one
   * naming another tenant's sandbox must not be honoured. Default `true` for providers that cannot
   * tell (their ids are derived from the identity, so a foreign id names a sandbox `get` must
   * still find); providers that track identities override it.
   */
  sandboxBelongsTo(_sandboxId: string, _identity: { userId?: string; threadId: string }): boolean {
    return true;
  }

  /**
   * The skills view `sandboxId` shows, when the provider can tell from the id and `identity`'s
   * (user, thread) alone (a pure lookup, as `get`): `policy` for the sandbox a run under an explicit
   * skill policy gets, `shared` for the thread's plain one, `undefined` when it cannot tell (the
   * view is not fixed by the sandbox, or the id is not this identity's under `identity.spec`, the
   * acquire spec that is part of some providers' ids). The tool layer uses it so
   * that no re-acquisition (eviction, restart, a persisted id, a lease manager's replacement) moves
   * a policy run to the shared view. Default `undefined`; providers whose policy runs get sandboxes
   * of their own override it.
   */
  skillsViewOf(
    _sandboxId: string,
    _identity: { userId?: string; threadId: string; spec?: SandboxSpec },
  ): SkillsView | undefined {
    return undefined;
  }

  /** Upload providers copy the thread's skill projection in; bind-mount providers need nothing. */
  async syncAgentSkills(_sandboxId: string, _options: SyncAgentSkillsOptions): Promise<void> {}

  /**
   * Called before acquisition (every provider's `acquire` starts with it). Refuses a user or thread
   * id outside the id rule of `identity/thread-id-rules.ts`, so no provider names a sandbox after
   * an id another would refuse. Fails closed when an explicit skill policy meets a provider that
   * cannot enforce it, so no sandbox is created or reused for such a run.
   */
  admit(options: AcquireOptions = {}): void {
    // `null` is how some JavaScript callers say "no thread" (an anonymous sandbox).
    if (options.threadId !== undefined && options.threadId !== null) {
      assertValidThreadIdentity({ userId: options.userId, threadId: options.threadId });
    }
    if (options.skillPolicy && !this.supportsAgentSkillIsolation) {
      throw new SandboxRuntimeError(
        `Sandbox provider ${this.constructor.name} cannot enforce per-Agent skill filesystem isolation`,
      );
    }
    if (options.fromSnapshot !== undefined && options.fromSnapshot !== null) {
      if (!this.lifecycleSupport.snapshot) {
        throw CapabilityNotSupportedError.lifecycle(this.constructor.name, 'fromSnapshot');
      }
      if (options.threadId === undefined || options.threadId === null) {
        throw new InvalidArgumentError('fromSnapshot needs a thread to restore into');
      }
    }
    // A spec the provider cannot honour, or outside the operator's bounds, is refused before
    // anything is created or reused; never silently dropped.
    checkSandboxSpec(options.spec, this.specSupport, this.specPolicy, this.constructor.name);
  }

  /** The operator's bounds on acquire specs (`sandbox.spec`); providers return their config's. */
  protected get specPolicy(): SandboxSpecPolicy {
    return DEFAULT_SPEC_POLICY;
  }
}
