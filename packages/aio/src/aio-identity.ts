import {
  SandboxIdentityCollisionError,
  isValidThreadIdentity,
  resolveEffectiveUserId,
} from '@sbx/core';
import {
  deriveSandboxScopeToken,
  identityScopesFor,
  serializerKey,
  specIdentityScope,
} from '@sbx/core/provider-kit';
import type { Sandbox, SandboxSpec, SkillsView, WarmEntry } from '@sbx/core';
import type { SandboxBook } from '@sbx/core/provider-kit';
import type { SandboxInfo } from './sandbox-info.js';

/** Who a thread's sandbox is for: part of its id, checked on every hand-out. */
export interface AioThreadIdentity {
  readonly userId: string;
  readonly threadId: string;
  readonly explicitSkillPolicy: boolean;
  /** The acquire's spec, checked; its image and resources are part of the id. */
  readonly spec?: SandboxSpec | undefined;
}

export interface AioActiveEntry {
  readonly client: Sandbox;
  readonly info: SandboxInfo;
  /** Undefined for an anonymous sandbox. */
  readonly identity: AioThreadIdentity | undefined;
}

export interface AioWarmValue {
  readonly info: SandboxInfo;
  /** Undefined: unknown (adopted by reconciliation) or anonymous. */
  readonly identity: AioThreadIdentity | undefined;
}

export type AioBook = SandboxBook<AioActiveEntry, AioWarmValue>;

/** The thread key of the book: which active sandbox a thread reuses. */
export function identityKey(identity: AioThreadIdentity): string {
  // A spec that changes what the sandbox is (image, resources) makes it another sandbox of the
  // thread: reuse and reclaim must not hand out one made to another spec.
  const specScope = specIdentityScope(identity.spec);
  return specScope
    ? serializerKey(
        identity.userId,
        identity.threadId,
        identity.explicitSkillPolicy,
        specScope.value,
      )
    : serializerKey(identity.userId, identity.threadId, identity.explicitSkillPolicy);
}

function describeIdentity(identity: AioThreadIdentity | undefined): string {
  if (identity === undefined) return '(anonymous)';
  const policy = identity.explicitSkillPolicy ? ', explicit skill policy' : '';
  const spec = specIdentityScope(identity.spec) ? ', own spec' : '';
  return `(user=${identity.userId}, thread=${identity.threadId}${policy}${spec})`;
}

function sameIdentity(a: AioThreadIdentity, b: AioThreadIdentity): boolean {
  return (
    a.userId === b.userId &&
    a.threadId === b.threadId &&
    a.explicitSkillPolicy === b.explicitSkillPolicy
  );
}

/** The `userId` / `threadId` fields of a listing row (none for an anonymous or adopted one). */
export function identityFields(
  identity: AioThreadIdentity | undefined,
): { userId: string; threadId: string } | Record<string, never> {
  return identity === undefined ? {} : { userId: identity.userId, threadId: identity.threadId };
}

/** Never hand one tenant's container to another, nor overwrite its warm entry. */
export function checkIdentity(book: AioBook, id: string, requested: AioThreadIdentity): void {
  const active = book.active(id);
  if (active !== undefined) {
    const tracked = active.identity;
    if (tracked === undefined || !sameIdentity(tracked, requested)) {
      throw new SandboxIdentityCollisionError(
        id,
        describeIdentity(tracked),
        describeIdentity(requested),
      );
    }
  }
  const warm = book.pool.get(id);
  if (warm !== undefined) checkWarmIdentity(id, warm, requested);
}

/** Adopted warm entries (unknown identity) are reclaimable by whoever maps to the id. */
export function checkWarmIdentity(
  id: string,
  warm: WarmEntry<AioWarmValue>,
  requested: AioThreadIdentity,
): void {
  const tracked = warm.value.identity;
  if (tracked !== undefined && !sameIdentity(tracked, requested)) {
    throw new SandboxIdentityCollisionError(
      id,
      describeIdentity(tracked),
      describeIdentity(requested),
    );
  }
}

export interface AioSandboxIdOptions {
  readonly userId?: string | undefined;
  readonly threadId: string;
  readonly explicitSkillPolicy?: boolean | undefined;
  readonly spec?: SandboxSpec | undefined;
}

/** The deterministic id of a thread's sandbox (policy-, skills-root- and spec-scoped). */
export function aioSandboxId(skillsRoot: string, options: AioSandboxIdOptions): string {
  const specScope = specIdentityScope(options.spec);
  return deriveSandboxScopeToken({
    userId: resolveEffectiveUserId(options.userId),
    threadId: options.threadId,
    scope: [
      ...identityScopesFor({
        skillsContainerPath: skillsRoot,
        explicitSkillPolicy: options.explicitSkillPolicy === true,
      }),
      ...(specScope ? [specScope] : []),
    ],
  });
}

/**
 * The skills view of one of this thread's ids: a policy-scoped run has an id (and a container
 * mounting the thread's projection) of its own, so the id alone says which view it shows, on any
 * instance and after a restart. `undefined` for an id that is neither (another thread, another
 * spec, an anonymous sandbox) or ids the rule refuses.
 */
export function aioSkillsViewOf(
  skillsRoot: string,
  sandboxId: string,
  identity: { userId?: string | undefined; threadId: string; spec?: SandboxSpec | undefined },
): SkillsView | undefined {
  if (!isValidThreadIdentity(identity)) return undefined;
  const idOf = (explicitSkillPolicy: boolean) =>
    aioSandboxId(skillsRoot, { ...identity, explicitSkillPolicy });
  if (sandboxId === idOf(true)) return 'policy';
  if (sandboxId === idOf(false)) return 'shared';
  return undefined;
}
