import { randomUUID } from 'node:crypto';
import { InvalidArgumentError } from '../errors/errors.js';

/**
 * Lease and command-scope ids travel in the run context. They are server-owned: an id chosen by a
 * caller could name another execution's lease (and release it) or another agent's shell session,
 * so every ingress scrubs them and only server code mints them.
 */

/** Context key of the execution's lease owner id. */
export const LEASE_OWNER_CONTEXT_KEY = 'sandboxLeaseOwnerId';
/** Context key of the command scope (a subagent's own ordered shell session). */
export const COMMAND_SCOPE_CONTEXT_KEY = 'sandboxCommandScopeId';

/** Every spelling of the server-owned keys, including the snake_case names of the wire format. */
export const SERVER_OWNED_CONTEXT_KEYS = [
  LEASE_OWNER_CONTEXT_KEY,
  COMMAND_SCOPE_CONTEXT_KEY,
  'sandbox_lease_owner_id',
  'sandbox_command_scope_id',
] as const;

export type ServerOwnedContextKey = (typeof SERVER_OWNED_CONTEXT_KEYS)[number];

const PREFIX = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;

/** A fresh owner id `<prefix>:<uuid>` (`agent:…`, `gateway:upload:…`, …). */
export function createLeaseOwnerId(prefix = 'agent'): string {
  if (!PREFIX.test(prefix)) {
    throw new InvalidArgumentError(
      `Lease owner prefix must be non-empty and use only letters, digits, '_', '.', ':' or '-', got '${prefix}'`,
    );
  }
  return `${prefix}:${randomUUID()}`;
}

/**
 * A copy of `context` without any server-owned key. Call it on everything that arrives from a
 * client before the server adds its own ids. The input is not modified.
 */
export function scrubServerOwnedContext(
  context: Readonly<Record<string, unknown>> | null | undefined,
): Record<string, unknown> {
  if (context === null || context === undefined) return {};
  const out: Record<string, unknown> = { ...context };
  for (const key of SERVER_OWNED_CONTEXT_KEYS) delete out[key];
  return out;
}

function readId(context: unknown, key: string): string | undefined {
  if (typeof context !== 'object' || context === null) return undefined;
  const value = (context as Record<string, unknown>)[key];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** The execution's lease owner, if one was minted. Non-string or empty values count as absent. */
export function sandboxLeaseOwner(context: unknown): string | undefined {
  return readId(context, LEASE_OWNER_CONTEXT_KEY);
}

/** The command scope of this execution, if any (same absent-value rules). */
export function sandboxCommandScope(context: unknown): string | undefined {
  return readId(context, COMMAND_SCOPE_CONTEXT_KEY);
}

/**
 * Returns the context's lease owner, minting `<prefix>:<uuid>` into it first if there is none.
 * Returns `undefined` (and mints nothing) when `context` is not a plain object.
 */
export function ensureSandboxLeaseOwner(context: unknown, prefix = 'agent'): string | undefined {
  if (typeof context !== 'object' || context === null || Array.isArray(context)) return undefined;
  const existing = sandboxLeaseOwner(context);
  if (existing !== undefined) return existing;
  const owner = createLeaseOwnerId(prefix);
  (context as Record<string, unknown>)[LEASE_OWNER_CONTEXT_KEY] = owner;
  return owner;
}
