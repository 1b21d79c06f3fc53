import { ConfigError, InvalidArgumentError } from '@sbx/core';
import type { ConfigIssue } from '@sbx/core';
import type {
  AuthorizationDecision,
  AuthorizationProvider,
  AuthorizeOptions,
} from './authorization-provider.js';
import { describeType, isPlainObject } from './principal.js';
import type { Principal } from './principal.js';

/**
 * Request resource name → RBAC config key. Fixed: config keys are never derived by guessing a
 * plural. Resources not listed here are looked up under their own name.
 */
export const RBAC_RESOURCE_KEYS: Readonly<Record<string, string>> = Object.freeze({
  tool: 'tools',
  model: 'models',
  skill: 'skills',
  sandbox: 'sandbox',
  mcp_server: 'mcp_servers',
  route: 'routes',
});

/** `allow: "*"` / `true` = everything, `false` / `[]` = nothing, a list = exactly those names. */
export type RbacAllow = '*' | boolean | readonly string[];

export interface RbacPolicy {
  allow?: RbacAllow;
  /** Exact names that are denied whatever `allow` says. */
  deny?: readonly string[];
}

/** `roles.<role>.<resource key>` → policy. A role with no policy for a resource is unrestricted. */
export interface RbacProviderConfig {
  roles: Readonly<Record<string, Readonly<Record<string, RbacPolicy>>>>;
}

interface CompiledPolicy {
  readonly allowAll: boolean;
  readonly allow: ReadonlySet<string>;
  readonly deny: ReadonlySet<string>;
}

const POLICY_KEYS = ['allow', 'deny'] as const;

/** Config keys that are request aliases of a *different* key; `sandbox` maps to itself. */
const RESERVED_ALIASES: ReadonlyMap<string, string> = new Map(
  Object.entries(RBAC_RESOURCE_KEYS).filter(([alias, key]) => alias !== key),
);

function quoteList(items: readonly string[]): string {
  return `[${items.map((i) => `'${i}'`).join(', ')}]`;
}

function compileNameList(
  value: unknown,
  path: string,
  field: 'allow' | 'deny',
  issues: ConfigIssue[],
): Set<string> {
  const out = new Set<string>();
  if (!Array.isArray(value)) {
    issues.push({ path, message: `${field} list expected, got ${describeType(value)}` });
    return out;
  }
  value.forEach((item: unknown, i) => {
    if (typeof item !== 'string' || item === '') {
      issues.push({
        path: `${path}[${i}]`,
        message: `${field} entries must be non-empty strings, got ${
          item === '' ? 'an empty string' : describeType(item)
        }`,
      });
    } else {
      out.add(item);
    }
  });
  return out;
}

function compilePolicy(
  raw: unknown,
  path: string,
  issues: ConfigIssue[],
): CompiledPolicy | undefined {
  if (!isPlainObject(raw)) {
    issues.push({
      path,
      message: `policy must be a mapping with 'allow' and/or 'deny', got ${describeType(raw)}`,
    });
    return undefined;
  }
  const before = issues.length;
  for (const key of Object.keys(raw)) {
    if (!(POLICY_KEYS as readonly string[]).includes(key)) {
      issues.push({
        path: `${path}.${key}`,
        message: `unknown policy key '${key}'; supported: ${quoteList(POLICY_KEYS)}`,
      });
    }
  }

  let allowAll = false;
  let allow = new Set<string>();
  if (!('allow' in raw)) {
    allowAll = true;
  } else {
    const value = raw.allow;
    if (value === '*' || value === true) allowAll = true;
    else if (value === false) allow = new Set();
    else if (Array.isArray(value)) allow = compileNameList(value, `${path}.allow`, 'allow', issues);
    else {
      const shown = typeof value === 'string' ? `the string '${value}'` : describeType(value);
      issues.push({
        path: `${path}.allow`,
        message: `allow must be '*', true, false or a list of names, got ${shown}`,
      });
    }
  }

  let deny = new Set<string>();
  if ('deny' in raw) deny = compileNameList(raw.deny, `${path}.deny`, 'deny', issues);

  return issues.length === before ? { allowAll, allow, deny } : undefined;
}

function compileRoles(config: unknown): Map<string, Map<string, CompiledPolicy>> {
  const issues: ConfigIssue[] = [];
  const roles = new Map<string, Map<string, CompiledPolicy>>();

  if (!isPlainObject(config)) {
    throw new ConfigError(
      [{ path: '', message: `provider config must be a mapping, got ${describeType(config)}` }],
      'Invalid RBAC authorization provider config',
    );
  }
  const unknown = Object.keys(config).filter((k) => k !== 'roles');
  if (unknown.length > 0) {
    issues.push({
      path: '',
      message: `unknown provider config keys ${quoteList(unknown)}; supported: ['roles']`,
    });
  }
  if (!('roles' in config)) {
    issues.push({ path: 'roles', message: "missing required provider config key 'roles'" });
  } else if (!isPlainObject(config.roles)) {
    issues.push({
      path: 'roles',
      message: `roles must be a mapping of role name to resource policies, got ${describeType(config.roles)}`,
    });
  } else {
    for (const [role, resources] of Object.entries(config.roles)) {
      const rolePath = `roles.${role}`;
      if (role.trim() === '') {
        issues.push({ path: rolePath, message: 'role name must be a non-empty string' });
        continue;
      }
      if (!isPlainObject(resources)) {
        issues.push({
          path: rolePath,
          message: `role '${role}' must be a mapping of resource key to policy, got ${describeType(resources)}`,
        });
        continue;
      }
      const compiled = new Map<string, CompiledPolicy>();
      for (const [resourceKey, policy] of Object.entries(resources)) {
        const policyPath = `${rolePath}.${resourceKey}`;
        if (resourceKey.trim() === '') {
          issues.push({ path: policyPath, message: 'resource key must be a non-empty string' });
          continue;
        }
        const canonical = RESERVED_ALIASES.get(resourceKey);
        if (canonical !== undefined) {
          // A policy under `tool:` would never match (requests for `tool` read `tools`), silently
          // leaving the role unrestricted; reject it instead.
          issues.push({
            path: policyPath,
            message: `role '${role}' resource key '${resourceKey}' is a reserved request alias; use '${canonical}' in RBAC config`,
          });
          continue;
        }
        const c = compilePolicy(policy, policyPath, issues);
        if (c) compiled.set(resourceKey, c);
      }
      roles.set(role, compiled);
    }
  }

  if (issues.length > 0) {
    throw new ConfigError(issues, 'Invalid RBAC authorization provider config');
  }
  return roles;
}

function requireNonEmptyString(field: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    const shown = value === '' ? 'an empty string' : describeType(value);
    throw new InvalidArgumentError(`${field} must be a non-empty string, got ${shown}`);
  }
  return value;
}

/**
 * Built-in role-based provider. The whole policy is validated and compiled when the provider is
 * constructed, so a typo fails at startup (as a `ConfigError` naming the key path) rather than at the
 * first request, and later mutation of the config object has no effect.
 *
 * Matching is exact string equality; the only wildcard is the whole-policy `allow: "*"` / `true`.
 * `deny` always wins. `action` is accepted and ignored.
 */
export class RbacAuthorizationProvider implements AuthorizationProvider {
  readonly name = 'rbac';
  readonly #roles: ReadonlyMap<string, ReadonlyMap<string, CompiledPolicy>>;

  constructor(config: RbacProviderConfig) {
    this.#roles = compileRoles(config);
  }

  /** The configured role names, in config order. */
  get roleNames(): readonly string[] {
    return [...this.#roles.keys()];
  }

  hasRole(role: string): boolean {
    return this.#roles.has(role);
  }

  async authorize(
    principal: Principal,
    resource: string,
    _action: string,
    options: AuthorizeOptions,
  ): Promise<AuthorizationDecision> {
    return this.decide(principal, resource, options?.target);
  }

  async filterResources(
    principal: Principal,
    resourceType: string,
    candidates: readonly string[],
  ): Promise<string[]> {
    requireNonEmptyString('resource', resourceType);
    if (!Array.isArray(candidates)) {
      throw new InvalidArgumentError(
        `candidates must be an array of non-empty strings, got ${describeType(candidates)}`,
      );
    }
    candidates.forEach((c: unknown, i) => requireNonEmptyString(`candidates[${i}]`, c));
    const policies = this.#policiesFor(principal);
    const policy = policies.get(RBAC_RESOURCE_KEYS[resourceType] ?? resourceType);
    if (!policy) return [...candidates];
    return candidates.filter((c) => isAllowed(policy, c));
  }

  /** Synchronous core of `authorize`, exposed for layers that cannot await (e.g. list filters). */
  decide(principal: Principal, resource: string, target: string): AuthorizationDecision {
    requireNonEmptyString('resource', resource);
    requireNonEmptyString('target', target);
    const policies = this.#policiesFor(principal);
    const role = principal.role as string;
    const policy = policies.get(RBAC_RESOURCE_KEYS[resource] ?? resource);
    if (!policy) {
      return {
        allowed: true,
        reason: { code: 'authz.no_policy', message: 'no policy configured' },
        policyId: 'rbac:unrestricted',
      };
    }
    if (isAllowed(policy, target)) {
      return {
        allowed: true,
        reason: {
          code: 'authz.allowed',
          message: `role '${role}' is allowed '${target}' on resource '${resource}'`,
        },
        policyId: 'rbac:allow',
      };
    }
    return {
      allowed: false,
      reason: {
        code: 'authz.denied',
        message: `role '${role}' is denied '${target}' on resource '${resource}'`,
      },
      policyId: 'rbac:deny',
    };
  }

  #policiesFor(principal: Principal): ReadonlyMap<string, CompiledPolicy> {
    const role = principal?.role;
    if (role === undefined || role === null || role === '') {
      throw new InvalidArgumentError('Principal has no role; cannot evaluate RBAC policy');
    }
    const policies = this.#roles.get(role);
    if (!policies) {
      throw new InvalidArgumentError(
        `Unknown role '${role}'; known roles: ${quoteList(this.roleNames)}`,
      );
    }
    return policies;
  }
}

function isAllowed(policy: CompiledPolicy, target: string): boolean {
  if (policy.deny.has(target)) return false;
  return policy.allowAll || policy.allow.has(target);
}
