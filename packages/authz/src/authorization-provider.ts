import type { Principal } from './principal.js';

/** Why a decision went the way it did. Codes are stable (`authz.allowed`, `authz.denied`, ...). */
export interface AuthorizationReason {
  readonly code: string;
  readonly message: string;
}

export interface AuthorizationDecision {
  readonly allowed: boolean;
  readonly reason: AuthorizationReason;
  /** Which policy decided, e.g. `rbac:allow`, `rbac:deny`, `rbac:unrestricted`. */
  readonly policyId?: string;
  readonly metadata?: Readonly<Record<string, unknown>>;
}

export interface AuthorizeOptions {
  /** What the action applies to: a tool name, a route permission, `"*"` for the sandbox gate. */
  readonly target: string;
  /** Extra request facts for attribute-based providers. RBAC ignores it. */
  readonly context?: Readonly<Record<string, unknown>>;
}

/**
 * A pluggable policy decision point. Providers decide and nothing else: they never see
 * `fail_closed` or `default_role`; the enforcing layer applies those. A provider that cannot decide
 * (unknown role, bad input, backend down) throws, and the enforcing layer turns that into deny or
 * allow according to `authorization.fail_closed`.
 *
 * Resources in use: `tool` (action `call`, target = tool name), `model` (`use`), `skill`
 * (`activate`), `sandbox` (`execute`, target `"*"`), `mcp_server`, `route` (target = permission).
 */
export interface AuthorizationProvider {
  readonly name?: string;
  authorize(
    principal: Principal,
    resource: string,
    action: string,
    options: AuthorizeOptions,
  ): Promise<AuthorizationDecision>;
  /**
   * Optional bulk check: the subset of `candidates` the principal may use, in the candidates' order
   * (duplicates kept). Layers fall back to one `authorize` per candidate when it is absent.
   */
  filterResources?(
    principal: Principal,
    resourceType: string,
    candidates: readonly string[],
  ): Promise<string[]>;
}

/** Structural check used when a provider comes from a dynamic import. */
export function isAuthorizationProvider(value: unknown): value is AuthorizationProvider {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { authorize?: unknown; filterResources?: unknown };
  return (
    typeof v.authorize === 'function' &&
    (v.filterResources === undefined || typeof v.filterResources === 'function')
  );
}

/**
 * Whether a provider's return value is a well-formed decision. Enforcing layers treat anything else
 * as a provider error, so a provider returning `{ allowed: "yes" }` can never be read as an allow.
 */
export function isAuthorizationDecision(value: unknown): value is AuthorizationDecision {
  if (typeof value !== 'object' || value === null) return false;
  return typeof (value as { allowed?: unknown }).allowed === 'boolean';
}
