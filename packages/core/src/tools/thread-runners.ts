import { InvalidArgumentError } from '../errors/errors.js';
import { assertValidThreadIdentity } from '../identity/thread-id-rules.js';
import { runToolCall } from './run-tool.js';
import type { ToolContext } from './tool-context.js';
import { createToolRunner, type ToolRunner, type ToolRunnerOptions } from './tool-runner.js';
import { ToolSession } from './tool-session.js';

/** The thread (and user) a framework's run context names for one tool call. */
export interface RunIdentity {
  readonly threadId?: string | undefined;
  readonly userId?: string | undefined;
}

/**
 * Most threads one tool set keeps a tool context for. Past it the least recently used thread's
 * context goes: its next call starts with no read marks (read-before-write asks it to read again)
 * and finds its sandbox through the provider, which hands a thread its own sandbox back.
 */
export const MAX_RUN_THREADS = 1000;

/**
 * The tool runners of one tool set: the construction-time one, and one per other thread a run
 * context named, each with its own sandbox id and read marks, so one tool set serves many
 * conversations and no thread sees another's workspace or read marks.
 */
export class ThreadRunners {
  readonly base: ToolRunner;
  readonly #offered: ReadonlySet<string>;
  readonly #byThread = new Map<string, ToolRunner>();
  readonly #maxThreads: number;

  constructor(options: ToolRunnerOptions, maxThreads = MAX_RUN_THREADS) {
    this.base = createToolRunner(options);
    this.#offered = new Set(this.base.definitions.map((d) => d.name));
    this.#maxThreads = maxThreads;
  }

  /**
   * The runner for `identity`, each id falling back to the construction-time one. The ids come
   * from the host's run context: checked by the id rule before they key anything.
   *
   * @throws InvalidArgumentError for an id outside the id rule, or when the tool set's context is
   *   tied to its thread in ways a derived context cannot copy (a lease owner, a command scope,
   *   a local thread layout)
   */
  for(identity: RunIdentity | undefined): ToolRunner {
    const base = this.base.context;
    const threadId = identity?.threadId ?? base.threadId;
    const userId = identity?.userId ?? base.userId;
    if (threadId === base.threadId && userId === base.userId) return this.base;
    if (threadId === undefined) {
      throw new InvalidArgumentError(
        'a run context named a user but no thread, and the tools have none',
      );
    }
    assertValidThreadIdentity({ threadId, userId });
    const key = JSON.stringify([userId ?? null, threadId]);
    const known = this.#byThread.get(key);
    if (known) {
      // Most recently used last: eviction takes the first.
      this.#byThread.delete(key);
      this.#byThread.set(key, known);
      return known;
    }
    const runner = this.#runnerOn(threadContext(base, threadId, userId));
    this.#byThread.set(key, runner);
    if (this.#byThread.size > this.#maxThreads) {
      const oldest = this.#byThread.keys().next().value;
      if (oldest !== undefined) this.#byThread.delete(oldest);
    }
    return runner;
  }

  /**
   * The base runner's tools on another context. Not `createToolRunner`: that would convert the
   * definitions' schemas again, milliseconds of CPU per new thread; these are the same.
   */
  #runnerOn(context: ToolContext): ToolRunner {
    const { base } = this;
    const offered = this.#offered;
    return {
      context,
      definitions: base.definitions,
      // A tool not offered is refused by the base runner, which touches no sandbox for it.
      call: (name, input, options) =>
        offered.has(name)
          ? runToolCall(name, input, context, options)
          : base.call(name, input, options),
    };
  }
}

/**
 * `base` for another thread: the same provider, configuration, hooks and environment, with state
 * and read marks of its own. What ties a context to one thread beyond its ids is refused, not
 * dropped: the lease owner would then hold two threads' sandboxes in turn, a command scope would
 * mix their processes, and a local thread layout names the other thread's directories.
 */
function threadContext(
  base: ToolContext,
  threadId: string,
  userId: string | undefined,
): ToolContext {
  const tied = [
    base.leaseOwnerId !== undefined ? 'leaseOwnerId' : undefined,
    base.commandScopeId !== undefined ? 'commandScopeId' : undefined,
    base.local?.threadData !== undefined ? 'local.threadData' : undefined,
  ].filter((name) => name !== undefined);
  if (tied.length > 0) {
    throw new InvalidArgumentError(
      `the run context names thread ${threadId}, but these tools' context is tied to thread ` +
        `${base.threadId ?? '(none)'} by ${tied.join(', ')}; create one tool set per thread instead`,
    );
  }
  const { state: _state, session: _session, userId: _userId, ...shared } = base;
  const context: ToolContext = { ...shared, threadId, state: {}, session: new ToolSession() };
  if (userId !== undefined) context.userId = userId;
  return context;
}
