import type { Logger } from '../logging/logger.js';
import type { AgentSkillPolicy, SandboxProvider } from '../contract/sandbox-provider.js';
import type { SandboxSpec } from '../contract/sandbox-spec.js';
import type { ToolConfigInput } from './tool-config.js';
import type { ToolSession } from './tool-session.js';
import type { ThreadDataPaths } from '../paths/virtual-paths.js';

/**
 * Per-thread tool state the host persists between tool calls (e.g. in its checkpoint). The tools
 * write `sandboxId` after a lazy acquisition; hosts persist it so the next turn reuses the sandbox.
 */
export interface ToolState {
  sandboxId?: string;
}

export interface SandboxAcquireRequest {
  threadId: string;
  userId?: string;
  /** The tenant's sandbox spec (see `ToolContext.sandboxSpec`). */
  spec?: SandboxSpec;
  /** The run's explicit skill policy (see `ToolContext.skillPolicy`). */
  skillPolicy?: AgentSkillPolicy;
  signal?: AbortSignal;
}

/**
 * The subset of an execution-lease manager the tools use. `SandboxLeaseManager` satisfies it; any
 * object with the same shape works, so the tool layer does not depend on one implementation.
 */
export interface ToolLeaseManager {
  /** Binds `ownerId` to the thread's sandbox (acquiring it from the provider when needed). */
  acquire(ownerId: string, request: SandboxAcquireRequest): Promise<string>;
  /**
   * Keeps `sandboxId` when it is still live (binding the owner to it) or acquires a replacement, as
   * one transition. Optional: without it a persisted id is revalidated with `provider.get` only.
   */
  reuseOrAcquire?(
    ownerId: string,
    sandboxId: string,
    request: SandboxAcquireRequest,
  ): Promise<string>;
  /** Drops the owner's hold; used to roll back an acquisition whose sandbox cannot be found. */
  release(ownerId: string): Promise<void>;
}

/**
 * How a tool call obtains a sandbox id for its thread. Overrides both the lease manager and the
 * provider: hosts plug in their own lifecycle here.
 */
export type SandboxAcquireStrategy = (
  context: ToolContext,
  request: SandboxAcquireRequest,
) => Promise<string>;

/**
 * Authorization hook for sandbox use. Called before a persisted sandbox id is reused and before any
 * acquisition, at most once per tool invocation (see `runToolInvocation`). Deny by throwing
 * `SandboxAuthorizationError`; resolve to allow.
 */
export type SandboxAuthorizer = (context: ToolContext) => Promise<void>;

/**
 * Request-scoped environment for `bash` (e.g. secrets of the current request). A function is
 * called on every bash call, so short-lived tokens are fetched fresh. Values of 8+ characters are
 * redacted from the command output.
 */
export type ToolEnvSource =
  | Readonly<Record<string, string>>
  | (() => Readonly<Record<string, string>> | Promise<Readonly<Record<string, string>>>);

/**
 * Host-side facts about a local (host-backed) sandbox. The tool layer uses them to validate file-tool
 * paths and bash commands before they reach the host, to start commands in the workspace, and to
 * mask host paths in results. Remote sandboxes ignore them.
 */
export interface LocalToolEnvironment {
  /** Host directories of the thread (workspace, uploads, outputs, ACP workspace). */
  threadData?: ThreadDataPaths;
  /** Where skills appear to the agent. Default `/mnt/skills`. */
  skillsContainerPath?: string;
  /** Host directory shown at `skillsContainerPath`; masked in output. */
  skillsHostPath?: string;
  /** Host directory of managed integration skills; masked in output. */
  integrationsHostPath?: string;
  /** Host directory of the user's raw custom skills; masked in output. */
  userCustomSkillsHostPath?: string;
  /** Configured mounts whose host directory exists (see `existingMounts`). */
  customMounts?: readonly { readonly containerPath: string; readonly readOnly: boolean }[];
  /** Roots of enabled MCP filesystem servers that bash may name (see `mcpFilesystemRoots`). */
  mcpAllowedPaths?: readonly string[];
}

/**
 * Everything a tool call needs besides its input. Hosts build one per agent run (or per tool call
 * with shared `state` and `session`).
 */
export interface ToolContext {
  provider: SandboxProvider;
  threadId?: string;
  userId?: string;
  state: ToolState;
  config?: ToolConfigInput;
  /**
   * Read marks of the read-before-write gate. Without a session the marks live in a session bound
   * to this context object (see `toolSessionOf`).
   */
  session?: ToolSession;
  /** Execution-lease owner of this run; with `leaseManager`, acquisition goes through the manager. */
  leaseOwnerId?: string;
  leaseManager?: ToolLeaseManager;
  /** Replaces the default acquisition path (lease manager, else provider). */
  acquireSandbox?: SandboxAcquireStrategy;
  authorize?: SandboxAuthorizer;
  /** Request-scoped environment overlay for `bash`. */
  env?: ToolEnvSource;
  /**
   * Command scope for `bash` (a subagent's lease owner): commands of one scope share one ordered
   * shell session on providers that support it.
   */
  commandScopeId?: string;
  /** Host-side facts for local sandboxes; see `LocalToolEnvironment`. */
  local?: LocalToolEnvironment;
  /**
   * What this run's sandbox must be (image, resources, timeout, labels), passed to every
   * acquisition; the provider refuses what it cannot honour. A persisted `sandboxId` is reused
   * as it is: give the spec from a thread's first turn on.
   */
  sandboxSpec?: SandboxSpec;
  /**
   * The lead agent's explicit skill policy, when the run has one: passed to every acquisition the
   * tools make (directly, through the lease manager, or to `acquireSandbox`), so a thread acquired
   * again (evicted, after a restart, a persisted id whose sandbox is gone) keeps the policy's view.
   * A sandbox that would show such a run the shared skills is refused (`SkillPolicyViewError`).
   */
  skillPolicy?: AgentSkillPolicy;
  signal?: AbortSignal;
  logger?: Logger;
}

/**
 * The request's environment overlay (`context.env`), resolved: what `bash` and the process tools
 * give a command, and redact from what it prints.
 */
export async function requestEnvOf(
  context: ToolContext,
): Promise<Readonly<Record<string, string>>> {
  const source = context.env;
  if (!source) return {};
  return typeof source === 'function' ? await source() : source;
}
