import { assertValidThreadIdentity } from '../identity/thread-id-rules.js';
import type { ToolContext, ToolState } from './tool-context.js';
import { ToolSession } from './tool-session.js';

export type CreateToolContextOptions = Omit<ToolContext, 'state' | 'session'> & {
  state?: ToolState;
  session?: ToolSession;
};

/**
 * A tool context with fresh state and a fresh session unless given. One context per agent run is
 * the usual shape: its session then holds exactly the run's read marks. Pass the same `state`
 * (persisted sandbox id) and `session` to share them across runs of one thread.
 *
 * @throws InvalidArgumentError for a user or thread id outside the id rule (checked again by every
 *   tool call, for contexts built by hand)
 */
export function createToolContext(options: CreateToolContextOptions): ToolContext {
  if (options.threadId) {
    assertValidThreadIdentity({ userId: options.userId, threadId: options.threadId });
  }
  return { ...options, state: options.state ?? {}, session: options.session ?? new ToolSession() };
}
