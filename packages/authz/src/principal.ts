import { InvalidArgumentError } from '@sbx/core';

/**
 * Who is asking. Every enforcement layer (tool filter, sandbox gate, gateway requests) builds this
 * through `buildPrincipal`, so the identity rules below cannot drift between layers.
 *
 * All seven fields are always present; an unknown value is `undefined`, never an empty string
 * (except `role`, which keeps an unknown non-empty name verbatim so the provider can reject it).
 */
export interface Principal {
  readonly userId: string | undefined;
  readonly role: string | undefined;
  readonly oauthProvider: string | undefined;
  readonly oauthId: string | undefined;
  /** IM sender id for channel-originated runs. Server-owned. */
  readonly channelUserId: string | undefined;
  /** True only for server-internal callers. Server-owned: never taken from a request body. */
  readonly isInternal: boolean;
  /** Provider-specific attributes (ABAC inputs). Server-owned; a frozen shallow copy. */
  readonly attributes: Readonly<Record<string, unknown>>;
}

/**
 * The identity keys a runtime/tool context may carry. Values are `unknown` because contexts are
 * assembled from several sources; `buildPrincipal` checks each one.
 */
export interface PrincipalContext {
  readonly userId?: unknown;
  readonly userRole?: unknown;
  readonly oauthProvider?: unknown;
  readonly oauthId?: unknown;
  readonly channelUserId?: unknown;
  readonly isInternal?: unknown;
  readonly authzAttributes?: unknown;
}

export interface BuildPrincipalOptions {
  /** Replaces a missing, `null` or empty role. An unknown non-empty role is kept as is. */
  defaultRole?: string | undefined;
}

/** `typeof`-style name for error messages: `null`, `Array`, `Map`, `string`, a class name, ... */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'Array';
  if (typeof value === 'object') {
    const ctor = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)
      ?.constructor;
    return typeof ctor?.name === 'string' && ctor.name !== '' ? ctor.name : 'Object';
  }
  return typeof value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function optionalString(field: keyof PrincipalContext, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    throw new InvalidArgumentError(`${field} must be a string, got ${describeType(value)}`);
  }
  return value;
}

function normaliseAttributes(value: unknown): Readonly<Record<string, unknown>> {
  if (value === undefined || value === null) return Object.freeze({});
  if (!isPlainObject(value)) {
    throw new InvalidArgumentError(
      `authzAttributes must be a plain object, got ${describeType(value)}`,
    );
  }
  return Object.freeze({ ...value });
}

/** The one role rule: only a missing or empty role falls back to the default role. */
export function effectiveRole(
  role: string | undefined | null,
  defaultRole: string | undefined,
): string | undefined {
  if (role === undefined || role === null || role === '') {
    return defaultRole === '' ? undefined : defaultRole;
  }
  return role;
}

/**
 * Builds a principal from a runtime context. Pure: reads no global configuration, caches nothing and
 * never mutates `context` (attributes are copied, so later changes to the context do not leak in).
 *
 * @throws InvalidArgumentError when `authzAttributes` is not a plain object or an identity field is
 *   not a string.
 */
export function buildPrincipal(
  context: PrincipalContext | null | undefined,
  options: BuildPrincipalOptions = {},
): Principal {
  const ctx: PrincipalContext = context ?? {};
  return Object.freeze({
    userId: optionalString('userId', ctx.userId),
    role: effectiveRole(optionalString('userRole', ctx.userRole), options.defaultRole),
    oauthProvider: optionalString('oauthProvider', ctx.oauthProvider),
    oauthId: optionalString('oauthId', ctx.oauthId),
    channelUserId: optionalString('channelUserId', ctx.channelUserId),
    // Literal `true` only: `1`, `"true"` or a truthy object from an untyped source must not grant
    // internal status.
    isInternal: ctx.isInternal === true,
    attributes: normaliseAttributes(ctx.authzAttributes),
  });
}

/**
 * Applies `defaultRole` to an already built principal (same rule as `buildPrincipal`), so a
 * principal built before the authorization config was known still gets the configured default.
 * Returns the same object when nothing changes.
 */
export function withDefaultRole(principal: Principal, defaultRole: string | undefined): Principal {
  const role = effectiveRole(principal.role, defaultRole);
  return role === principal.role ? principal : Object.freeze({ ...principal, role });
}
