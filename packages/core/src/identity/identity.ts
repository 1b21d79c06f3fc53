import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../errors/errors.js';
import { assertSafePathSegment } from './thread-id-rules.js';

/**
 * Deterministic sandbox identity. Remote providers name their containers / VMs after a token
 * derived from (user, thread), so any gateway instance finds the same sandbox again. The base
 * derivation is a compatibility contract with existing deployments: changing it orphans every
 * running sandbox.
 */

/** The user a sandbox belongs to when nobody is authenticated. */
export const DEFAULT_USER_ID = 'default';

/** `userId` when it is a non-empty string, else `"default"`. */
export function resolveEffectiveUserId(userId?: string | null): string {
  return userId || DEFAULT_USER_ID;
}

/**
 * One component that makes an identity differ from the thread's base identity, e.g. an explicit
 * agent skill policy (which mounts a different skills view) or a non-default skills root. A
 * sandbox created under one scope must never be reused under another.
 */
export interface SandboxScope {
  /** Lower-case kebab name of what varies, e.g. `skills-root`. */
  readonly kind: string;
  readonly value: string;
}

/** Scope kinds sbx itself uses; providers use these so they derive identical identities. */
export const SandboxScopeKinds = {
  /** A lead agent under an explicit skill policy sees the thread projection, not the shared view. */
  agentSkillPolicy: 'agent-skill-policy',
  /** `skills.container_path` when it is not `/mnt/skills`. */
  skillsRoot: 'skills-root',
} as const;

export interface SandboxScopeTokenInput {
  /** Resolved with `resolveEffectiveUserId` (absent or empty → `"default"`). */
  readonly userId?: string | null;
  readonly threadId: string;
  /** Absent or empty: the base identity of (user, thread). */
  readonly scope?: SandboxScope | readonly SandboxScope[];
}

const HEX16 = /^[0-9a-f]{16}$/;
const SCOPED = /^s[0-9a-f]{16}$/;
const KIND_RE = /^[a-z][a-z0-9-]*$/;

/** Marks a scoped token. Not a hex digit, so no scoped token can equal any 16-hex base token. */
const SCOPED_PREFIX = 's';

const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

function normalizeScopes(scope: SandboxScopeTokenInput['scope']): SandboxScope[] {
  if (scope === undefined) return [];
  const list = (Array.isArray(scope) ? scope : [scope]) as readonly SandboxScope[];
  const seen = new Set<string>();
  for (const s of list) {
    if (typeof s?.kind !== 'string' || !KIND_RE.test(s.kind)) {
      throw new InvalidArgumentError(
        `sandbox scope kind must be lower-case kebab-case (e.g. "skills-root"), got ${JSON.stringify(s?.kind)}`,
      );
    }
    if (typeof s.value !== 'string') {
      throw new InvalidArgumentError(`sandbox scope "${s.kind}" needs a string value`);
    }
    if (seen.has(s.kind))
      throw new InvalidArgumentError(`sandbox scope kind "${s.kind}" given twice`);
    seen.add(s.kind);
  }
  // Order-independent: the same set of scopes always names the same sandbox.
  return [...list].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
}

/**
 * The deterministic sandbox token of (user, thread), optionally scoped.
 *
 * Both ids must pass the id rule (`thread-id-rules.ts`), checked here so that no provider can
 * derive a token from an id another provider would refuse.
 *
 * Base (no scope): the first 16 lower-case hex characters of sha256(UTF-8 `"<user>:<thread>"`) —
 * bit-compatible with the reference for every id that passes. The formula alone is ambiguous when
 * ids contain `:` (`("a:b", "c")` and `("a", "b:c")` would share a token); the id rule refuses `:`,
 * so it never is.
 *
 * Scoped: `"s"` followed by 16 hex characters of sha256 over a JSON array of a version tag, the
 * user, the thread and the sorted scopes. Two guarantees:
 * - it never equals a base token, by format: base tokens are exactly 16 hex characters and `s` is
 *   not a hex digit;
 * - it is unambiguous: JSON string encoding is injective, so ids containing `:` (or anything else)
 *   cannot make two different (user, thread, scopes) inputs hash the same text.
 *
 * @throws InvalidArgumentError for an invalid user or thread id or a malformed scope
 */
export function deriveSandboxScopeToken(input: SandboxScopeTokenInput): string {
  const threadId = assertSafePathSegment('threadId', input.threadId);
  const userId = assertSafePathSegment('userId', resolveEffectiveUserId(input.userId));
  const scopes = normalizeScopes(input.scope);
  if (scopes.length === 0) return sha256Hex(`${userId}:${threadId}`).slice(0, 16);
  const canonical = JSON.stringify([
    'sbx-scope-v1',
    userId,
    threadId,
    ...scopes.flatMap((s) => [s.kind, s.value]),
  ]);
  return SCOPED_PREFIX + sha256Hex(canonical).slice(0, 16);
}

/** The scopes a provider folds into identity for one acquire; empty for the default layout. */
export function identityScopesFor(options: {
  /** The provider-startup snapshot of `skills.container_path`. */
  skillsContainerPath?: string;
  /** The lead agent runs under an explicit skill policy (thread projection mounts). */
  explicitSkillPolicy?: boolean;
}): SandboxScope[] {
  const scopes: SandboxScope[] = [];
  const root = options.skillsContainerPath?.replace(/\/+$/, '');
  if (root !== undefined && root !== '/mnt/skills') {
    scopes.push({ kind: SandboxScopeKinds.skillsRoot, value: root });
  }
  if (options.explicitSkillPolicy) {
    scopes.push({ kind: SandboxScopeKinds.agentSkillPolicy, value: 'thread-projection' });
  }
  return scopes;
}

/** `'base'` / `'scoped'` for a token `deriveSandboxScopeToken` can produce, else `undefined`. */
export function sandboxScopeTokenKind(token: string): 'base' | 'scoped' | undefined {
  if (HEX16.test(token)) return 'base';
  if (SCOPED.test(token)) return 'scoped';
  return undefined;
}

const SANDBOX_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/**
 * Whether `id` is acceptable as a sandbox id anywhere in sbx: 1-128 characters of letters, digits
 * and `_ . : -`, starting with a letter or digit. Covers derived tokens, local ids such as
 * `local:<user>:<thread>`, and random anonymous ids, while excluding path separators, whitespace
 * and shell metacharacters (ids end up in container names, lock-file names and store keys).
 */
export function isValidSandboxId(id: unknown): id is string {
  return typeof id === 'string' && SANDBOX_ID_RE.test(id);
}
