import { SkillPolicyViewError } from '../errors/skill-policy-errors.js';
import { silentLogger } from '../logging/logger.js';
import type { SandboxAcquireRequest, ToolContext } from './tool-context.js';

/**
 * The skills-view rule of every way the tool layer reaches a thread's sandbox. A run under an
 * explicit skill policy (`request.skillPolicy`) must only ever get a sandbox of the policy's view,
 * and a thread whose persisted sandbox showed a policy's view must not silently fall back to the
 * shared view when that sandbox is gone (evicted, restarted away) and the run does not say which it
 * is. Both are judged by what the provider can tell from an id (`skillsViewOf`); a provider that
 * cannot tell (its view is not fixed by the sandbox) passes.
 */

/** What a persisted id means for this run's view. */
export interface PersistedView {
  /** The id to go on with; undefined when it must not be reused for this run. */
  readonly persisted: string | undefined;
  /**
   * The persisted sandbox showed a policy's view and this run carries no policy: it may be reused
   * while it lives, but never replaced by another sandbox.
   */
  readonly policyOnly: boolean;
}

export function screenPersistedView(
  context: ToolContext,
  request: SandboxAcquireRequest,
  persisted: string,
): PersistedView {
  const view = context.provider.skillsViewOf?.(persisted, request);
  if (request.skillPolicy !== undefined && view === 'shared') {
    // A policy run acquires its own view instead; the shared sandbox is not touched.
    (context.logger ?? silentLogger).warn(
      'Ignoring a persisted sandbox id showing the shared skills to a run under a skill policy',
      { sandboxId: persisted, threadId: request.threadId, userId: request.userId },
    );
    return { persisted: undefined, policyOnly: false };
  }
  return { persisted, policyOnly: request.skillPolicy === undefined && view === 'policy' };
}

/** The refusal when the policy sandbox a run without a policy relied on is gone. */
export function policyViewGone(persisted: string): SkillPolicyViewError {
  return new SkillPolicyViewError(
    persisted,
    `The thread's sandbox ${persisted} showed an explicit skill policy's view and is gone; this run carries no skill policy, so it is not replaced with the shared view. Pass the run's skillPolicy in the tool context, or clear the persisted sandbox id for a run without one`,
  );
}

/**
 * Why `sandboxId`, just reused or acquired, must not serve this run, or undefined when it may.
 * Checked on the id every acquisition path returned, so a lease manager, a replacement or a
 * host's `acquireSandbox` that drops the policy cannot hand the run the shared view.
 */
export function viewRefusal(
  context: ToolContext,
  request: SandboxAcquireRequest,
  sandboxId: string,
  persisted: PersistedView | undefined,
): SkillPolicyViewError | undefined {
  const view = context.provider.skillsViewOf?.(sandboxId, request);
  if (request.skillPolicy !== undefined && view === 'shared') {
    return new SkillPolicyViewError(
      sandboxId,
      `Sandbox ${sandboxId} shows the shared skills, and this run is under an explicit skill policy`,
    );
  }
  if (persisted?.policyOnly && persisted.persisted !== undefined && view !== 'policy') {
    return policyViewGone(persisted.persisted);
  }
  return undefined;
}
