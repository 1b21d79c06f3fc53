import { AsyncLocalStorage } from 'node:async_hooks';
import { SandboxAuthorizationError } from '@sbx/core';
import type { Logger } from '@sbx/core';
import type { AuthorizationConfig } from './authorization-config.js';
import { readAuthorizationConfig } from './config-source.js';
import type { AuthorizationConfigSource } from './config-source.js';
import { isAuthorizationDecision } from './authorization-provider.js';
import type { AuthorizationDecision, AuthorizationProvider } from './authorization-provider.js';
import { withDefaultRole } from './principal.js';
import type { Principal } from './principal.js';
import { resolveAuthorizationProvider } from './provider-loader.js';
import type { ModuleImporter } from './provider-loader.js';
import { describeError, requiredWarningsLogger } from './required-warnings-logger.js';

type MaybePromise<T> = T | Promise<T>;

export interface SandboxGateOptions {
  config: AuthorizationConfigSource;
  /**
   * Builds the provider for a decision. Default: `resolveAuthorizationProvider` (a new instance per
   * decision, nothing cached). Hosts that keep their own provider instance may return it here.
   */
  resolveProvider?: (
    config: AuthorizationConfig,
  ) => MaybePromise<AuthorizationProvider | undefined>;
  /** Module importer for `authorization.provider.use` (tests). */
  importer?: ModuleImporter;
  /** Default: silent except the warnings this gate must emit. */
  logger?: Logger;
}

/** How a gate call that did not throw came out. */
export type SandboxGateOutcome =
  | { readonly status: 'disabled' }
  | { readonly status: 'allowed'; readonly decision: AuthorizationDecision }
  /** The provider could not decide and `fail_closed` is false. */
  | { readonly status: 'failed-open'; readonly error: unknown };

export const SANDBOX_RESOURCE = 'sandbox';
export const SANDBOX_EXECUTE_ACTION = 'execute';
export const SANDBOX_TARGET = '*';

const DISABLED: SandboxGateOutcome = Object.freeze({ status: 'disabled' });

class MalformedDecisionError extends Error {
  constructor(value: unknown) {
    super(
      `authorization provider returned ${value === null ? 'null' : typeof value === 'object' ? 'an object without a boolean "allowed"' : typeof value} instead of an AuthorizationDecision`,
    );
    this.name = 'MalformedDecisionError';
  }
}

interface GateScope {
  /** The allow of this scope; a deny or error is never remembered. */
  allowed: SandboxGateOutcome | undefined;
  pending: Promise<SandboxGateOutcome> | undefined;
}

const scopeStorage = new AsyncLocalStorage<GateScope>();

/**
 * Runs `fn` as one unit of sandbox work for one principal: the first gate call inside decides and
 * every later call reuses an allow (concurrent calls share the pending decision). A deny is not
 * remembered, so a second touch asks again and fails again. Nested scopes join the outer one.
 *
 * The core tool layer already scopes one decision per tool invocation (`runToolInvocation`); use
 * this for host code that touches the sandbox several times outside the tool layer.
 */
export function withSandboxAuthorizationScope<T>(fn: () => Promise<T>): Promise<T> {
  if (scopeStorage.getStore()) return fn();
  return scopeStorage.run({ allowed: undefined, pending: undefined }, fn);
}

/**
 * The `sandbox:execute` gate: one binary `authorize(principal, "sandbox", "execute", { target: "*" })`
 * decision. Call it before reusing a persisted sandbox id and before any acquisition: an id that
 * survived in a checkpoint or a warm pool confers no standing permission, because roles and policy
 * change while the sandbox stays alive. Nothing is cached between calls (config, provider and
 * decision are all fresh), except inside `withSandboxAuthorizationScope`.
 *
 * - No config, or `enabled` not literally `true` → no-op.
 * - The provider cannot be resolved, throws, or returns something that is not a decision →
 *   `fail_closed: true` throws `SandboxAuthorizationError` (no role for resolution failures);
 *   `fail_closed: false` allows and logs a warning.
 * - Deny → `SandboxAuthorizationError` carrying the principal's (effective) role.
 *
 * The principal's missing/empty role is replaced by `authorization.default_role` here, so a
 * principal built before the config was known gets the configured default.
 *
 * @throws SandboxAuthorizationError — the only error this function throws
 */
export async function authorizeSandboxExecution(
  principal: Principal,
  options: SandboxGateOptions,
): Promise<SandboxGateOutcome> {
  const scope = scopeStorage.getStore();
  if (!scope) return decide(principal, options);
  if (scope.allowed) return scope.allowed;
  if (!scope.pending) {
    scope.pending = (async () => {
      try {
        const outcome = await decide(principal, options);
        scope.allowed = outcome;
        return outcome;
      } finally {
        scope.pending = undefined;
      }
    })();
  }
  return scope.pending;
}

async function decide(
  principal: Principal,
  options: SandboxGateOptions,
): Promise<SandboxGateOutcome> {
  const logger = options.logger ?? requiredWarningsLogger;

  let config: AuthorizationConfig | null | undefined;
  try {
    config = await readAuthorizationConfig(options.config);
  } catch (err) {
    logger.warn('Sandbox authorization config could not be read; denying sandbox execution', {
      error: describeError(err),
    });
    throw new SandboxAuthorizationError(undefined, undefined, { cause: err });
  }
  // Identity check, not truthiness: only an explicit `true` turns enforcement on.
  if (!config || config.enabled !== true) return DISABLED;
  const failClosed = config.failClosed !== false;

  let provider: AuthorizationProvider | undefined;
  try {
    provider = options.resolveProvider
      ? await options.resolveProvider(config)
      : await resolveAuthorizationProvider(
          config,
          options.importer ? { importer: options.importer } : {},
        );
    if (!provider) throw new Error('no authorization provider was resolved');
  } catch (err) {
    return onProviderError(err, failClosed, undefined, 'resolve', logger);
  }

  const effective = withDefaultRole(principal, config.defaultRole);
  let decision: unknown;
  try {
    decision = await provider.authorize(effective, SANDBOX_RESOURCE, SANDBOX_EXECUTE_ACTION, {
      target: SANDBOX_TARGET,
    });
    if (!isAuthorizationDecision(decision)) throw new MalformedDecisionError(decision);
  } catch (err) {
    // A provider may itself deny by throwing the authorization error; that is a decision, not a
    // failure, and must never be turned into an allow by fail-open.
    if (err instanceof SandboxAuthorizationError) throw err;
    return onProviderError(err, failClosed, effective.role, 'authorize', logger);
  }
  if (!decision.allowed) {
    throw new SandboxAuthorizationError(undefined, effective.role);
  }
  return { status: 'allowed', decision };
}

function onProviderError(
  err: unknown,
  failClosed: boolean,
  role: string | undefined,
  stage: 'resolve' | 'authorize',
  logger: Logger,
): SandboxGateOutcome {
  const fields: Record<string, unknown> = { stage, error: describeError(err) };
  if (role !== undefined) fields.role = role;
  if (failClosed) {
    logger.warn('Sandbox authorization provider failed; denying (fail_closed)', fields);
    throw new SandboxAuthorizationError(undefined, role, { cause: err });
  }
  logger.warn('Sandbox authorization provider failed; allowing (fail_closed is false)', fields);
  return { status: 'failed-open', error: err };
}
