import { SandboxRuntimeError } from './errors.js';
import type { Sandbox } from './sandbox.js';

/** An explicit skill policy of a lead agent: the skills it may see, by name (empty = none). */
export interface AgentSkillPolicy {
  readonly allowedSkills: readonly string[];
}

export interface AcquireOptions {
  userId?: string;
  /** Absent: an anonymous sandbox (legacy/generic), never serialized per thread. */
  threadId?: string;
  /** Present when the lead agent runs under an explicit skill policy. */
  skillPolicy?: AgentSkillPolicy;
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

  abstract get(sandboxId: string): Sandbox | undefined;

  /** End-of-turn release; the provider decides what it means (no-op, park in a warm pool, ...). */
  abstract release(sandboxId: string): Promise<void>;

  /** Clears state that must not survive replacing this provider. Default: nothing. */
  async reset(): Promise<void> {}

  /** Full teardown. Default: nothing. */
  async shutdown(): Promise<void> {}

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

  /** Upload providers copy the thread's skill projection in; bind-mount providers need nothing. */
  async syncAgentSkills(_sandboxId: string, _options: SyncAgentSkillsOptions): Promise<void> {}

  /**
   * Called before acquisition. Fails closed when an explicit skill policy meets a provider that
   * cannot enforce it, so no sandbox is created or reused for such a run.
   */
  admit(options: AcquireOptions = {}): void {
    if (options.skillPolicy && !this.supportsAgentSkillIsolation) {
      throw new SandboxRuntimeError(
        `Sandbox provider ${this.constructor.name} cannot enforce per-Agent skill filesystem isolation`,
      );
    }
  }
}
