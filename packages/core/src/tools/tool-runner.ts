import { createToolContext, type CreateToolContextOptions } from './create-tool-context.js';
import { runToolCall, type ToolCallOptions } from './run-tool.js';
import type { ToolContext } from './tool-context.js';
import { getToolDefinitions, type ToolDefinition } from './tool-definitions.js';
import { toolSessionOf } from './read-before-write.js';
import { ToolErrorCode, toolCallResult, type ToolCallResult } from './tool-result.js';
import { ALL_TOOL_NAMES, TOOL_NAMES, type ToolName } from './tool-schemas.js';
import { resolveToolConfig } from './tool-config.js';

interface ToolSelection {
  /**
   * Tools to offer, in this order. Default: the seven, plus the process tools when the context's
   * tool configuration turns them on (`processTools`).
   */
  tools?: readonly ToolName[];
  /** Strict-mode schemas (see `getToolDefinitions`). */
  strict?: boolean;
}

/** Either the pieces of a new tool context, or an existing one (shared state, session, hooks). */
export type ToolRunnerOptions =
  | (CreateToolContextOptions & ToolSelection & { context?: undefined })
  | (ToolSelection & { context: ToolContext });

export type { ToolCallOptions } from './run-tool.js';

/**
 * What a framework adapter needs from sbx: the definitions to offer and one call per tool-use,
 * every call on the same context, so the sandbox id, the read-before-write marks, the lease owner
 * and the authorization hook are exactly those of `runTool` for one agent run.
 */
export interface ToolRunner {
  readonly context: ToolContext;
  readonly definitions: readonly ToolDefinition[];
  call(name: string, input: unknown, options?: ToolCallOptions): Promise<ToolCallResult>;
}

/**
 * One tool context for a run of an agent framework, and its tools' definitions. Each call gets a
 * shallow copy of the context with the combined signal: state (`sandboxId`) and session are shared
 * objects, so what one call acquires or reads the next call sees. `call(name, input, { signal,
 * onOutput })` takes the call's own abort signal and output listener (see `ToolCallOptions`).
 */
export function createToolRunner(options: ToolRunnerOptions): ToolRunner {
  const { tools: asked, strict, ...rest } = options;
  const context =
    rest.context ?? createToolContext(rest as CreateToolContextOptions & { context?: undefined });
  const processTools = resolveToolConfig(context.config).processTools;
  const tools = asked ?? (processTools ? ALL_TOOL_NAMES : TOOL_NAMES);
  // Per-call copies of the context must share one session (the read marks), also when the host's
  // context came without one.
  toolSessionOf(context);
  const definitions = getToolDefinitions({ tools, strict: strict === true, processTools });
  const offered = new Set<string>(tools);
  return {
    context,
    definitions,
    async call(name, input, callOptions = {}) {
      if (!offered.has(name)) {
        const available = [...offered].join(', ') || '(none)';
        const text = `Error: Tool '${name}' is not available here. Available tools: ${available}`;
        return toolCallResult(text, ToolErrorCode.UNKNOWN_TOOL);
      }
      return runToolCall(name, input, context, callOptions);
    },
  };
}
