import { assertSafePathSegment } from '@sbx/core';

/** Which skills view a thread's sandbox shows: the shared categories, or a policy's projection. */
export type SkillsMode = 'shared' | 'policy';

/**
 * Sandbox id of a thread. A policy-scoped run has its own id (and sandbox), so a plain acquire of
 * the same thread (a subagent, an upload sync, a re-acquire after eviction) can never replace the
 * policy run's filtered skills view with the shared one. Both ids pass core's id rule (no `/`, no
 * `:`), so `local:<user>:<thread>` splits one way only and `/policy` cannot occur in a user id: no
 * two (user, thread, mode) share an id.
 *
 * @throws InvalidArgumentError for an id outside the rule
 */
export function localSandboxId(userId: string, threadId: string, mode: SkillsMode): string {
  const user = assertSafePathSegment('userId', userId);
  const thread = assertSafePathSegment('threadId', threadId);
  return mode === 'policy' ? `local:${user}/policy:${thread}` : `local:${user}:${thread}`;
}
