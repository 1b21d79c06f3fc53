import { AsyncLocalStorage } from 'node:async_hooks';
import type { ToolContext } from './tool-context.js';

/**
 * One composed tool invocation: the tool body plus every sandbox touch around it (the
 * read-before-write inspection, the post-read hash, the post-write re-hash). Authorization is a
 * property of the invocation, not of each touch: it is decided once, at the first touch, and every
 * later touch of the same invocation reuses that decision. The next invocation decides again, so a
 * role or policy change applies to the very next tool call.
 */
export interface ToolInvocation {
  /** Process-unique, increasing. */
  readonly id: number;
  readonly context: ToolContext;
  /** True once the authorization hook allowed this invocation. */
  readonly authorized: boolean;
}

interface MutableInvocation {
  readonly id: number;
  readonly context: ToolContext;
  authorized: boolean;
  /** The in-flight decision, shared by concurrent touches inside one invocation. */
  pending: Promise<void> | undefined;
}

const storage = new AsyncLocalStorage<MutableInvocation>();
let nextId = 1;

/**
 * Runs `fn` as one tool invocation. Nested calls join the outer invocation (one decision covers
 * them all), the same way a composed invocation shares one decision across its parts.
 */
export function runToolInvocation<T>(context: ToolContext, fn: () => Promise<T>): Promise<T> {
  if (storage.getStore()) return fn();
  const invocation: MutableInvocation = {
    id: nextId++,
    context,
    authorized: false,
    pending: undefined,
  };
  return storage.run(invocation, fn);
}

/** The invocation the caller runs in, if any. */
export function currentToolInvocation(): ToolInvocation | undefined {
  return storage.getStore();
}

/**
 * Runs the context's authorization hook unless the current invocation already passed it. Outside an
 * invocation every call decides. A denial is never remembered: it propagates to the caller, which
 * turns it into the tool's error result.
 */
export async function authorizeSandboxUse(context: ToolContext): Promise<void> {
  const authorize = context.authorize;
  if (!authorize) return;
  const invocation = storage.getStore();
  if (!invocation) {
    await authorize(context);
    return;
  }
  if (invocation.authorized) return;
  if (!invocation.pending) {
    invocation.pending = (async () => {
      try {
        await authorize(context);
        invocation.authorized = true;
      } finally {
        invocation.pending = undefined;
      }
    })();
  }
  await invocation.pending;
}
