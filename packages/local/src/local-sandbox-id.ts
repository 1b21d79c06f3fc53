import { assertSafePathSegment } from '@sbx/core';

/** Which skills view a thread's sandbox shows: the shared categories, or a policy's projection. */
export type SkillsMode = 'shared' | 'policy';

const NETWORK_KEY = /^[0-9a-f]{16}$/;

/**
 * Sandbox id of a thread. A policy-scoped run has its own id (and sandbox), so a plain acquire of
 * the same thread (a subagent, an upload sync, a re-acquire after eviction) can never replace the
 * policy run's filtered skills view with the shared one. So has a restricting network policy
 * (`network`, the key of `localNetworkKey`): a sandbox, and its namespace, serves one policy. Both
 * ids pass core's id rule (no `/`, no `:`), so `local:<user>...:<thread>` splits one way only and
 * `/policy` or `/net-` cannot occur in a user id: no two (user, thread, mode, network) share an id.
 *
 * @throws InvalidArgumentError for an id outside the rule
 */
export function localSandboxId(
  userId: string,
  threadId: string,
  mode: SkillsMode,
  network?: string,
): string {
  const user = assertSafePathSegment('userId', userId);
  const thread = assertSafePathSegment('threadId', threadId);
  if (network !== undefined && !NETWORK_KEY.test(network)) {
    throw new TypeError('a network key is 16 hexadecimal digits');
  }
  const net = network === undefined ? '' : `/net-${network}`;
  return mode === 'policy'
    ? `local:${user}/policy${net}:${thread}`
    : `local:${user}${net}:${thread}`;
}

/**
 * The skills mode of `sandboxId` when it is one of `(userId, threadId)`'s ids (any network), else
 * `undefined`.
 */
export function localSandboxIdMode(
  sandboxId: string,
  userId: string,
  threadId: string,
): SkillsMode | undefined {
  const prefix = `local:${userId}`;
  const suffix = `:${threadId}`;
  if (!sandboxId.startsWith(prefix) || !sandboxId.endsWith(suffix)) return undefined;
  const middle = sandboxId.slice(prefix.length, sandboxId.length - suffix.length);
  const match = /^(\/policy)?(?:\/net-([0-9a-f]{16}))?$/.exec(middle);
  if (!match) return undefined;
  const mode: SkillsMode = match[1] ? 'policy' : 'shared';
  // Rebuilt and compared: only an id `localSandboxId` makes is one of this thread's.
  return localSandboxId(userId, threadId, mode, match[2]) === sandboxId ? mode : undefined;
}
