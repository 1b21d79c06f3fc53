import { SandboxIdentityCollisionError } from '../errors/errors.js';

/** The (user, thread) a sandbox was made for, the user already resolved. */
export interface ThreadIdentity {
  readonly userId: string;
  readonly threadId: string;
}

export function sameThreadIdentity(a: ThreadIdentity, b: ThreadIdentity): boolean {
  return a.userId === b.userId && a.threadId === b.threadId;
}

/** `(user, thread)`, or `unknown` for a sandbox whose identity is not known. */
export function describeThreadIdentity(
  identity: ThreadIdentity | undefined,
  unknown: string,
): string {
  return identity === undefined ? unknown : `(${identity.userId}, ${identity.threadId})`;
}

/**
 * A sandbox id is derived from (user, thread), so two identities can only meet under one id
 * through a hash collision or a bug; either way one tenant's sandbox must never be handed to
 * another. Passes only when both identities are known and equal: a sandbox of unknown identity
 * (anonymous, or adopted where a caller does not accept that) is a collision too.
 *
 * @param unknown how an `undefined` identity is named in the error, e.g. `an anonymous sandbox`
 * @throws SandboxIdentityCollisionError naming both identities
 */
export function assertSameThreadIdentity(
  sandboxId: string,
  tracked: ThreadIdentity | undefined,
  requested: ThreadIdentity | undefined,
  unknown: string,
): void {
  if (tracked !== undefined && requested !== undefined && sameThreadIdentity(tracked, requested)) {
    return;
  }
  throw new SandboxIdentityCollisionError(
    sandboxId,
    describeThreadIdentity(tracked, unknown),
    describeThreadIdentity(requested, unknown),
  );
}
