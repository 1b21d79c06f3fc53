import {
  errorMessage,
  isSbxError,
  type ToolCallResult,
  type ToolDefinition,
  type ToolOutputListener,
  type ToolRunnerOptions,
  loadOptionalDependency,
} from '@sbx/core';
import type * as Agents from '@openai/agents';
import type { FunctionTool } from '@openai/agents';
import { runIdentityOf } from './run-identity.js';
import { ThreadRunners } from '@sbx/core';

type AgentsModule = typeof Agents;

/**
 * Options: a new tool context (`provider`, `threadId`, `userId`, `config`, `authorize`,
 * `leaseManager`, ...) or an existing `context`, plus `tools` (which to offer: by default the
 * seven, and the four process tools when `config.processTools` is on), `strict` (strict-mode
 * schemas, for providers that enforce them) and `threadFromContext`.
 */
export type CreateSbxToolsOptions = ToolRunnerOptions & {
  /**
   * Whether the run's context picks the thread. By default (unset) each call runs in the thread
   * and for the user its run's context names (`run(agent, input, { context: { threadId, userId }
   * })`) whenever it names one, else in `threadId` / `userId` given here, each thread with its own
   * sandbox and read-before-write marks: one agent serves many conversations. `false`: every call
   * runs in the thread given here, whatever the context says.
   *
   * @deprecated `true`, the former opt-in, is the default now.
   */
  threadFromContext?: boolean;
  /**
   * Receives `bash`'s output while the command runs, a line at a time, masked, redacted and
   * bounded as the result is, all before the call's result: the SDK's run stream has no event for
   * a tool's progress, so a host forwards these to its own stream (a UI, a log). It must not
   * block; one that throws is logged once and gets nothing more for that call.
   */
  onToolOutput?: (event: SbxToolOutputEvent) => void;
};

/** One piece of a running command's output (`onToolOutput`). */
export interface SbxToolOutputEvent {
  readonly tool: string;
  /** The function call's id, when the SDK gave one. */
  readonly callId?: string;
  readonly stream: 'stdout' | 'stderr';
  readonly text: string;
  /** The run's context (`run(agent, input, { context })`), as the tool got it. */
  readonly runContext: unknown;
}

/** Marks the output of a failed call for SDK-side consumers (custom data on the output item). */
export interface SbxToolOutcome {
  readonly isError: boolean;
  readonly code?: string;
}

/** A call in the run's thread; a bad thread id in the run context is the call's failure. */
async function callInThread(
  runners: ThreadRunners,
  threadFromContext: boolean,
  runContext: unknown,
  name: string,
  input: unknown,
  signal: AbortSignal | undefined,
  onOutput: ToolOutputListener | undefined,
): Promise<ToolCallResult> {
  let runner = runners.base;
  if (threadFromContext) {
    try {
      runner = runners.for(runIdentityOf(runContext));
    } catch (err) {
      const message = errorMessage(err);
      const code = isSbxError(err) ? err.code : 'UNEXPECTED';
      return { text: `Error: ${message}`, isError: true, error: { code, message } };
    }
  }
  return runner.call(name, input, { signal, onOutput });
}

function agentsTool(
  agents: AgentsModule,
  runners: ThreadRunners,
  threadFromContext: boolean,
  definition: ToolDefinition,
  strict: boolean,
  onToolOutput: ((event: SbxToolOutputEvent) => void) | undefined,
): FunctionTool {
  const { name } = definition;
  const outcomes = new Map<string, SbxToolOutcome>();
  const common = {
    name,
    description: definition.description,
    // The schema is plain JSON (no Standard Schema marker), so the SDK passes the model's
    // arguments through and sbx validates them: a bad argument reaches the model as sbx's message.
    parameters: definition.inputSchema as never,
    execute: async (
      input: unknown,
      runContext: unknown,
      details?: { signal?: AbortSignal; toolCall?: { callId?: string } },
    ): Promise<string> => {
      const callId = details?.toolCall?.callId;
      const onOutput: ToolOutputListener | undefined = onToolOutput
        ? (chunk) =>
            onToolOutput({
              tool: name,
              ...(callId !== undefined ? { callId } : {}),
              stream: chunk.stream,
              text: chunk.text,
              runContext,
            })
        : undefined;
      const result = await callInThread(
        runners,
        threadFromContext,
        runContext,
        name,
        input,
        details?.signal,
        onOutput,
      );
      if (callId !== undefined) {
        outcomes.set(callId, {
          isError: result.isError,
          ...(result.error ? { code: result.error.code } : {}),
        });
      }
      // OpenAI function outputs are text; a failure is sbx's error text, which the model reads.
      return result.text;
    },
    // Only reached when something outside sbx's tool layer throws (sbx itself never does):
    // keep its message instead of the SDK's generic "An error occurred while running the tool".
    errorFunction: (_context: unknown, error: unknown) => `Error: ${errorMessage(error)}`,
    customDataExtractor: ({ toolCall }: { toolCall: { callId: string } }) => {
      const outcome = outcomes.get(toolCall.callId);
      outcomes.delete(toolCall.callId);
      return outcome ? { sbx: outcome } : undefined;
    },
  };
  return (strict
    ? agents.tool({ ...common, strict: true })
    : agents.tool({ ...common, strict: false })) as unknown as FunctionTool;
}

/**
 * The sbx tools as OpenAI Agents SDK function tools, for `new Agent({ tools })`:
 *
 *     const tools = await createSbxTools({ provider, threadId: 't1' });
 *     const agent = new Agent({ name: 'coder', model, tools });
 *
 * Every call runs through `runToolCall` on the tool context of its thread (the one the run's
 * context names when it names one, else the one given here): per thread the same sandbox, lease owner,
 * read-before-write marks and authorization hook as `runTool`. The model reads sbx's text for
 * every outcome (function outputs have no error flag); the structured outcome is attached to the
 * output item as custom data (`{ sbx: { isError, code } }`). The run's abort signal cancels the
 * sandbox call. Async because `@openai/agents` is loaded on first use.
 */
export async function createSbxTools(options: CreateSbxToolsOptions): Promise<FunctionTool[]> {
  const agents = await loadOptionalDependency<AgentsModule>('@openai/agents', '@sbx/openai-agents');
  const { threadFromContext = true, onToolOutput, ...runnerOptions } = options;
  const strict = options.strict ?? true;
  const runners = new ThreadRunners({ ...runnerOptions, strict });
  return runners.base.definitions.map((definition) =>
    agentsTool(agents, runners, threadFromContext, definition, strict, onToolOutput),
  );
}
