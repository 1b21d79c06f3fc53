import type { Principal } from './principal.js';
import { authorizeSandboxExecution } from './sandbox-gate.js';
import type { SandboxGateOptions } from './sandbox-gate.js';

export type SandboxAuthorizerOptions<C> = SandboxGateOptions &
  (
    | {
        /** The principal of the run the tool context belongs to. */
        principal: Principal;
        getPrincipal?: never;
      }
    | {
        /** Derives the principal from the tool context on every decision. */
        getPrincipal: (context: C) => Principal | Promise<Principal>;
        principal?: never;
      }
  );

/**
 * The `authorize` hook of the core tool context (`ToolContext.authorize`). The tool layer calls it
 * before reusing a persisted sandbox id and before acquiring one, once per tool invocation, and
 * turns the `SandboxAuthorizationError` of a deny into the tool's ordinary error result
 * (`Error: Sandbox execution is not permitted for your role (role=guest)`).
 *
 * Every call is a fresh decision (config re-read, provider re-resolved), so a role change between
 * two tool calls applies to the second one even while the sandbox stays cached.
 *
 * ```ts
 * const context: ToolContext = {
 *   provider, threadId, userId, state,
 *   authorize: createSandboxAuthorizer({ config: () => currentAuthzConfig(), principal }),
 * };
 * ```
 */
export function createSandboxAuthorizer<C = unknown>(
  options: SandboxAuthorizerOptions<C>,
): (context: C) => Promise<void> {
  const { principal, getPrincipal, ...gate } = options;
  return async (context: C): Promise<void> => {
    const who = getPrincipal ? await getPrincipal(context) : (principal as Principal);
    await authorizeSandboxExecution(who, gate);
  };
}
