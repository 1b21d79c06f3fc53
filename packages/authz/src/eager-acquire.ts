import { SandboxAuthorizationError } from '@sbx/core';
import type { AgentSkillPolicy, Logger } from '@sbx/core';
import { describeError, requiredWarningsLogger } from './required-warnings-logger.js';

export interface EagerAcquireOptions<T> {
  /** The gate for this run, e.g. `() => authorizer(context)` or `() => authorizeSandboxExecution(...)`. */
  authorize: () => Promise<unknown>;
  /** The eager acquisition (lease manager or provider). Not called on a deny. */
  acquire: () => Promise<T>;
  /**
   * The lead agent's explicit skill policy, if any. With a policy a deny aborts the run instead of
   * deferring: the eager acquisition is what replaces an older checkpointed shared-view sandbox
   * with a skill-isolated one, so skipping it could let a later tool call reuse the old sandbox.
   */
  skillPolicy?: AgentSkillPolicy | undefined;
  logger?: Logger;
}

/**
 * The eager (before the agent runs) acquisition path with the same gate as the lazy tool path.
 *
 * On a deny the acquisition is skipped and `undefined` returned: the run goes on, and the deny
 * surfaces at the first sandbox-touching tool call as that tool's error result, so eager and lazy
 * runs answer the agent the same way. Under an explicit skill policy the deny is rethrown.
 * Errors other than a deny (including from `acquire`) propagate unchanged.
 */
export async function eagerAcquireWithAuthorization<T>(
  options: EagerAcquireOptions<T>,
): Promise<T | undefined> {
  try {
    await options.authorize();
  } catch (err) {
    if (!(err instanceof SandboxAuthorizationError) || options.skillPolicy) throw err;
    (options.logger ?? requiredWarningsLogger).info(
      'Sandbox execution denied; skipping eager acquisition (the first sandbox tool call will report it)',
      { error: describeError(err), ...(err.role === undefined ? {} : { role: err.role }) },
    );
    return undefined;
  }
  return options.acquire();
}
