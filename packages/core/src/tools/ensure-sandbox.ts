import { SandboxNotFoundError, SandboxRuntimeError } from '../errors/errors.js';
import { assertValidThreadIdentity } from '../identity/thread-id-rules.js';
import { silentLogger } from '../logging/logger.js';
import type { Sandbox } from '../contract/sandbox.js';
import type { SandboxAcquireRequest, ToolContext } from './tool-context.js';
import { authorizeSandboxUse } from './tool-invocation.js';
import { policyViewGone, screenPersistedView, viewRefusal } from './skills-view-guard.js';
import type { PersistedView } from './skills-view-guard.js';
import { errorMessage } from '../errors/error-inspection.js';

/**
 * The single entry through which every sandbox-backed tool reaches its sandbox: lazily acquires the
 * thread's sandbox on first use and revalidates a persisted id on every later use.
 *
 * Order matters:
 * 0. The context's user and thread ids pass the id rule (`identity/thread-id-rules.ts`) before
 *    anything else, whatever provider or acquisition strategy follows.
 * 1. Authorization runs before reusing a persisted id as well as before any acquisition. An id that
 *    survived in a checkpoint or warm pool confers no standing permission, because configuration and
 *    roles change while the sandbox stays alive.
 * 2. A persisted id is reused only if it belongs to the context's (user, thread)
 *    (`sandboxBelongsTo`) and the provider still knows it (`get` is an in-memory lookup);
 *    otherwise the call falls through to acquisition.
 * 3. Acquisition goes through the context's strategy, else the lease manager when the run has a
 *    lease owner, else the provider directly (after its `admit` hook).
 * 4. A sandbox the provider cannot find right after acquiring it is rolled back (released) before
 *    the error is raised, so the failed call leaves no hold behind.
 * 5. The run's skill policy (`context.skillPolicy`) goes with every acquisition, and the skills
 *    view of every id reused or acquired is checked (`skills-view-guard.ts`): a policy run never
 *    gets a shared-view sandbox, and a persisted policy-view sandbox that is gone is not replaced
 *    by a shared one for a run that carries no policy (`SkillPolicyViewError`, rolled back).
 */
export async function ensureSandboxInitialized(
  context: ToolContext | null | undefined,
): Promise<Sandbox> {
  if (!context) throw new SandboxRuntimeError('Tool runtime not available');
  if (!context.state) throw new SandboxRuntimeError('Tool runtime state not available');

  const threadId = context.threadId;
  // The context's ids are the caller's: checked before they select, authorize or name anything.
  if (threadId) assertValidThreadIdentity({ userId: context.userId, threadId });

  await authorizeSandboxUse(context);

  const request: SandboxAcquireRequest | undefined = threadId
    ? {
        threadId,
        ...(context.userId !== undefined ? { userId: context.userId } : {}),
        ...(context.sandboxSpec ? { spec: context.sandboxSpec } : {}),
        ...(context.skillPolicy ? { skillPolicy: context.skillPolicy } : {}),
        ...(context.signal ? { signal: context.signal } : {}),
      }
    : undefined;

  let persisted = context.state.sandboxId;
  if (persisted && request && context.provider.sandboxBelongsTo?.(persisted, request) === false) {
    // A persisted id is untrusted input: one naming another (user, thread) is dropped, and the
    // thread's own sandbox is acquired instead.
    (context.logger ?? silentLogger).warn(
      'Ignoring a persisted sandbox id that belongs to another user or thread',
      { sandboxId: persisted, threadId: request.threadId, userId: request.userId },
    );
    persisted = undefined;
    context.state.sandboxId = undefined;
  }
  let view: PersistedView | undefined;
  if (persisted && request) {
    view = screenPersistedView(context, request, persisted);
    if (view.persisted === undefined) {
      persisted = undefined;
      context.state.sandboxId = undefined;
    }
  }
  if (persisted) {
    let reusedId = persisted;
    const manager = context.leaseManager;
    if (request && context.leaseOwnerId && manager?.reuseOrAcquire && !context.acquireSandbox) {
      // A policy view the run relies on must not be replaced: refused before a replacement exists.
      if (view?.policyOnly && context.provider.get(persisted) === undefined) {
        throw policyViewGone(persisted);
      }
      // Binds this run's owner to the persisted sandbox (or a replacement) in one transition, so
      // the last holder of another run cannot park it between the liveness check and the use.
      reusedId = await manager.reuseOrAcquire(context.leaseOwnerId, persisted, request);
      const refused = viewRefusal(context, request, reusedId, view);
      if (refused) {
        await rollback(context, reusedId);
        throw refused;
      }
      context.state.sandboxId = reusedId;
    }
    const sandbox = context.provider.get(reusedId);
    if (sandbox) return sandbox;
    if (view?.policyOnly) throw policyViewGone(persisted);
  }

  if (!request) throw new SandboxRuntimeError('Thread ID not available in runtime context');

  const sandboxId = await acquire(context, request);
  const sandbox = context.provider.get(sandboxId);
  if (!sandbox) {
    await rollback(context, sandboxId);
    throw new SandboxNotFoundError('Sandbox not found after acquisition', sandboxId);
  }
  const refused = viewRefusal(context, request, sandboxId, undefined);
  if (refused) {
    await rollback(context, sandboxId);
    throw refused;
  }
  // Persisted only once the sandbox is known to exist, so a failed acquisition leaves no stale id.
  context.state.sandboxId = sandboxId;
  return sandbox;
}

function acquire(context: ToolContext, request: SandboxAcquireRequest): Promise<string> {
  if (context.acquireSandbox) return context.acquireSandbox(context, request);
  if (context.leaseOwnerId && context.leaseManager) {
    return context.leaseManager.acquire(context.leaseOwnerId, request);
  }
  const options = {
    threadId: request.threadId,
    ...(request.userId !== undefined ? { userId: request.userId } : {}),
    ...(request.spec ? { spec: request.spec } : {}),
    ...(request.skillPolicy ? { skillPolicy: request.skillPolicy } : {}),
    ...(request.signal ? { signal: request.signal } : {}),
  };
  // Duck-typed providers (not extending SandboxProvider) may lack the hook.
  context.provider.admit?.(options);
  return context.provider.acquire(options);
}

async function rollback(context: ToolContext, sandboxId: string): Promise<void> {
  const logger = context.logger ?? silentLogger;
  try {
    if (context.leaseOwnerId && context.leaseManager && !context.acquireSandbox) {
      await context.leaseManager.release(context.leaseOwnerId);
    } else {
      await context.provider.release(sandboxId);
    }
  } catch (err) {
    // The lookup miss is the error the caller must see; a failed rollback is only reported.
    logger.warn('Rolling back a sandbox that vanished after acquisition failed', {
      sandboxId,
      error: errorMessage(err),
    });
  }
}
