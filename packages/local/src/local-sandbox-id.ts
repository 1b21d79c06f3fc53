/** Which skills view a thread's sandbox shows: the shared categories, or a policy's projection. */
export type SkillsMode = 'shared' | 'policy';

/**
 * Sandbox id of a thread. A policy-scoped run has its own id (and sandbox), so a plain acquire of
 * the same thread (a subagent, an upload sync, a re-acquire after eviction) can never replace the
 * policy run's filtered skills view with the shared one. `/policy` cannot occur in a user id
 * (no `/` allowed), so the two forms never collide.
 */
export function localSandboxId(userId: string, threadId: string, mode: SkillsMode): string {
  return mode === 'policy' ? `local:${userId}/policy:${threadId}` : `local:${userId}:${threadId}`;
}
