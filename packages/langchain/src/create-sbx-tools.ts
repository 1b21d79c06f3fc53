import {
  errorMessage,
  type ToolCallResult,
  type ToolDefinition,
  type ToolRunner,
  type ToolRunnerOptions,
} from '@sbx/core';
import { describingToolSchema } from '@sbx/core/internal';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { DynamicStructuredTool } from '@langchain/core/tools';
import { langChainModules, type LangChainModules } from './langchain-modules.js';
import { runIdentityOf } from './run-identity.js';
import { toolOutputEvents } from './tool-output-events.js';
import { ThreadRunners } from '@sbx/core';

/**
 * Options: a new tool context (`provider`, `threadId`, `userId`, `config`, `authorize`,
 * `leaseManager`, ...) or an existing `context`, plus `tools` (which to offer: by default the
 * seven, and the four process tools when `config.processTools` is on), `strict` (strict-mode
 * schemas, for providers that enforce them) and `threadFromContext`.
 */
export type CreateSbxToolsOptions = ToolRunnerOptions & {
  /**
   * Each call runs in the thread and for the user the run's config names
   * (`configurable.thread_id`, `configurable.user_id`), falling back to `threadId` / `userId`
   * given here, each thread with its own sandbox and read-before-write marks: one graph compiled
   * once serves many conversations. Default true; `false` runs every call in the thread given here.
   */
  threadFromContext?: boolean;
};

/** Thrown for a failed call made outside a tool call (a direct `tool.invoke(args)`). */
export class SbxToolError extends Error {
  override readonly name = 'SbxToolError';
  readonly code: string;

  constructor(result: ToolCallResult) {
    super(result.text);
    this.code = result.error?.code ?? 'UNEXPECTED';
  }
}

type ToolCallConfig = RunnableConfig & {
  toolCall?: { id?: string };
  writer?: ((chunk: unknown) => void) | null;
};

/** The runner of a call: its run's thread, or the error result a bad thread id gets. */
function runnerOf(
  runners: ThreadRunners,
  threadFromContext: boolean,
  config: ToolCallConfig,
): ToolRunner | ToolCallResult {
  if (!threadFromContext) return runners.base;
  try {
    return runners.for(runIdentityOf(config));
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const message = errorMessage(err);
    return {
      text: `Error: ${message}`,
      isError: true,
      error: { code: typeof code === 'string' ? code : 'UNEXPECTED', message },
    };
  }
}

function langChainTool(
  modules: LangChainModules,
  runners: ThreadRunners,
  threadFromContext: boolean,
  definition: ToolDefinition,
): DynamicStructuredTool {
  const { name } = definition;
  return modules.tools.tool(
    async (input: unknown, config: ToolCallConfig) => {
      const runner = runnerOf(runners, threadFromContext, config);
      let result: ToolCallResult;
      if (!('call' in runner)) {
        result = runner;
      } else if (name === 'bash') {
        // bash's output goes out while it runs (stream writer and custom events), all before
        // the result.
        const events = toolOutputEvents(modules, config, name, runner.context.logger);
        result = await runner.call(name, input, {
          signal: config.signal,
          onOutput: events.onOutput,
        });
        await events.settled();
      } else {
        result = await runner.call(name, input, { signal: config.signal });
      }
      if (!result.isError) return result.text;
      const toolCallId = config.toolCall?.id;
      if (toolCallId === undefined) throw new SbxToolError(result);
      // The native failure of a tool call: an error ToolMessage carrying sbx's text as it is.
      return new modules.messages.ToolMessage({
        content: result.text,
        status: 'error',
        tool_call_id: toolCallId,
        name,
        metadata: { sbx_error_code: result.error?.code },
      });
    },
    {
      name,
      description: definition.description,
      // Describes the arguments to the model; sbx validates them inside the call, so a bad one
      // reaches the model as sbx's message instead of "did not match expected schema".
      // LangChain reads Standard JSON Schemas (`toJsonSchema`) though its `tool()` typing does not
      // list them yet.
      schema: describingToolSchema(definition) as unknown as Record<string, unknown>,
    },
  ) as unknown as DynamicStructuredTool;
}

/**
 * The sbx tools as LangChain tools, for `model.bindTools(tools)`, `ToolNode` and LangGraph agents:
 *
 *     const tools = await createSbxTools({ provider, threadId: 't1' });
 *     const agent = createAgent({ model, tools });
 *
 * Every call runs through `runToolCall` on the tool context of its thread (the run's
 * `configurable.thread_id`, else the `threadId` given here): per thread the same sandbox, lease
 * owner, read-before-write marks and authorization hook as `runTool`. A failed tool call comes back as a
 * `ToolMessage` with `status: 'error'` and sbx's text; the run's abort signal cancels the sandbox
 * call. Async because `@langchain/core` is loaded on first use.
 */
export async function createSbxTools(
  options: CreateSbxToolsOptions,
): Promise<DynamicStructuredTool[]> {
  const modules = await langChainModules();
  const { threadFromContext = true, ...runnerOptions } = options;
  const runners = new ThreadRunners(runnerOptions);
  return runners.base.definitions.map((definition) =>
    langChainTool(modules, runners, threadFromContext, definition),
  );
}
