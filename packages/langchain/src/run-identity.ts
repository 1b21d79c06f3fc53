import { InvalidArgumentError } from '@sbx/core';
import type { RunIdentity } from '@sbx/core';

/**
 * The thread and user a LangChain run's config names: `configurable.thread_id` (LangGraph's
 * thread, what a checkpointer keys on) and `configurable.user_id`. Either may be absent.
 *
 * @throws InvalidArgumentError when one is present but not a string (a number or an object as a
 *   thread id is a host's mistake, not a thread to guess)
 */
export function runIdentityOf(config: unknown): RunIdentity | undefined {
  if (typeof config !== 'object' || config === null) return undefined;
  const configurable: unknown = (config as { configurable?: unknown }).configurable;
  if (typeof configurable !== 'object' || configurable === null) return undefined;
  const { thread_id: threadId, user_id: userId } = configurable as Record<string, unknown>;
  for (const [key, value] of [
    ['thread_id', threadId],
    ['user_id', userId],
  ] as const) {
    if (value !== undefined && value !== null && typeof value !== 'string') {
      throw new InvalidArgumentError(`configurable.${key} must be a string, got ${typeof value}`);
    }
  }
  if (typeof threadId !== 'string' && typeof userId !== 'string') return undefined;
  return {
    ...(typeof threadId === 'string' ? { threadId } : {}),
    ...(typeof userId === 'string' ? { userId } : {}),
  };
}
