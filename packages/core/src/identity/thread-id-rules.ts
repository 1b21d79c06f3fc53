import { InvalidArgumentError } from '../errors/errors.js';

/**
 * The one rule for user and thread ids, applied wherever an id enters sbx (an acquire, a tool
 * context, a sandbox id derivation, a host directory): every provider names its sandbox, its
 * directories or its lock after these ids, so one provider accepting what another refuses would
 * let two tenants meet under one name.
 *
 * An id is one safe path segment: non-empty, at most 255 characters, not `.` or `..`, and free of
 * `/`, `\`, NUL and other control characters (ids become directory names). It also contains no
 * `:`, because identities are joined with `:` — the base sandbox token hashes `"<user>:<thread>"`
 * and local ids are `local:<user>:<thread>` — so `("acme", "bob:notes")` and `("acme:bob",
 * "notes")` would otherwise name the same sandbox. Ids that pass keep their derivations byte for
 * byte.
 */
export const MAX_ID_LENGTH = 255;

export type IdKind = 'userId' | 'threadId';

/** Why `value` is not a valid id, or `undefined` when it is. */
export function idProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0) return 'must be a non-empty string';
  if (value.length > MAX_ID_LENGTH) return `longer than ${MAX_ID_LENGTH} characters`;
  if (value === '.' || value === '..') return `'${value}' is not a directory name`;
  // eslint-disable-next-line no-control-regex
  if (/[/\\\u0000-\u001f\u007f]/.test(value)) {
    return `must not contain '/', '\\', NUL or control characters`;
  }
  if (value.includes(':')) return `must not contain ':'`;
  return undefined;
}

/**
 * `value` when it is a valid user or thread id (see the rule above).
 *
 * @throws InvalidArgumentError naming the kind of id and the problem
 */
export function assertSafePathSegment(kind: IdKind, value: unknown): string {
  const problem = idProblem(value);
  if (problem !== undefined) {
    throw new InvalidArgumentError(`Invalid ${kind}: ${problem}`, { details: { field: kind } });
  }
  return value as string;
}

/** A thread-bound request's ids; an absent or empty user is the default user. */
export interface ThreadIdentityInput {
  readonly userId?: string | null | undefined;
  readonly threadId: unknown;
}

/**
 * Checks the (user, thread) of a thread-bound request. An absent or empty user stands for the
 * provider's default user and is not checked here (the default is a constant the provider
 * checked itself).
 *
 * @throws InvalidArgumentError for an invalid thread id or a present, invalid user id
 */
export function assertValidThreadIdentity(input: ThreadIdentityInput): void {
  assertSafePathSegment('threadId', input.threadId);
  if (input.userId !== undefined && input.userId !== null && input.userId !== '') {
    assertSafePathSegment('userId', input.userId);
  }
}

/** `assertValidThreadIdentity` as a predicate, for ids read back from storage or tags. */
export function isValidThreadIdentity(input: ThreadIdentityInput): boolean {
  const { userId } = input;
  const userOk = userId === undefined || userId === null || userId === '' || !idProblem(userId);
  return userOk && idProblem(input.threadId) === undefined;
}
