import { InvalidArgumentError } from '@sbx/core';
import type { RunIdentity } from '@sbx/core';

/**
 * The thread and user an Agents run's context names: `threadId` and `userId` of the object given
 * as `run(agent, input, { context })` (what tools get as `runContext.context`). Either may be
 * absent.
 *
 * @throws InvalidArgumentError when one is present but not a string
 */
export function runIdentityOf(runContext: unknown): RunIdentity | undefined {
  if (typeof runContext !== 'object' || runContext === null) return undefined;
  const context: unknown = (runContext as { context?: unknown }).context;
  if (typeof context !== 'object' || context === null) return undefined;
  const { threadId, userId } = context as Record<string, unknown>;
  for (const [key, value] of [
    ['threadId', threadId],
    ['userId', userId],
  ] as const) {
    if (value !== undefined && value !== null && typeof value !== 'string') {
      throw new InvalidArgumentError(
        `the run context's ${key} must be a string, got ${typeof value}`,
      );
    }
  }
  if (typeof threadId !== 'string' && typeof userId !== 'string') return undefined;
  return {
    ...(typeof threadId === 'string' ? { threadId } : {}),
    ...(typeof userId === 'string' ? { userId } : {}),
  };
}
