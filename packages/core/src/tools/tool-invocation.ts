import { AsyncLocalStorage } from 'node:async_hooks';
import type { ToolContext } from './tool-context.js';
import type { CommandDetails } from './command-details.js';
import type { ToolOutputListener } from './tool-output.js';

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
  /**
   * Set by the tool body when its result is a failure (see `toolFailure`). The tool decides; the
   * caller never infers failure from the text, which may legitimately start with `Error:`.
   */
  failureCode: string | undefined;
  /** Where the caller of this one call wants its command output while it runs, if anywhere. */
  readonly onOutput: ToolOutputListener | undefined;
  /** Set by a tool that ran a command: its outcome as data (see `recordCommandDetails`). */
  command: CommandDetails | undefined;
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
    failureCode: undefined,
    onOutput: undefined,
    command: undefined,
  };
  return storage.run(invocation, fn);
}

/**
 * Runs `fn` as one tool invocation and reports the failure code its tool body recorded, if any.
 * Always a fresh invocation (never joins an outer one): the outcome belongs to exactly this call,
 * and so does `onOutput` (see `toolOutputListener`).
 */
export async function runToolInvocationWithOutcome<T>(
  context: ToolContext,
  fn: () => Promise<T>,
  onOutput?: ToolOutputListener,
): Promise<{ value: T; failureCode: string | undefined; command: CommandDetails | undefined }> {
  const invocation: MutableInvocation = {
    id: nextId++,
    context,
    authorized: false,
    pending: undefined,
    failureCode: undefined,
    onOutput,
    command: undefined,
  };
  const value = await storage.run(invocation, fn);
  return { value, failureCode: invocation.failureCode, command: invocation.command };
}

/**
 * Marks the current invocation's result as a failure with `code`. The first code wins: a later
 * step (masking, truncation) must not overwrite the reason the tool gave. Outside an invocation it
 * is a no-op; the text alone is the result then.
 */
export function recordToolFailure(code: string): void {
  const invocation = storage.getStore();
  if (invocation && invocation.failureCode === undefined) invocation.failureCode = code;
}

/**
 * Records the outcome of the command the current invocation ran, for `ToolCallResult.command`. The
 * last record wins (a tool records once, after its command). Outside an invocation it is a no-op.
 */
export function recordCommandDetails(details: CommandDetails): void {
  const invocation = storage.getStore();
  if (invocation) invocation.command = details;
}

/**
 * The output listener of the call the caller runs in: per call, never part of the (shared) tool
 * context, so one call's listener never sees another call's output.
 */
export function toolOutputListener(): ToolOutputListener | undefined {
  return storage.getStore()?.onOutput;
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
