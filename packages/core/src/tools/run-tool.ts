import { shownPath } from '../paths/path-limits.js';
import { bashTool } from './bash-tool.js';
import { globTool } from './glob-tool.js';
import { grepTool } from './grep-tool.js';
import { maskHostPaths } from './local-sandbox-guard.js';
import { lsTool } from './ls-tool.js';
import { readFileTool } from './read-file-tool.js';
import { strReplaceTool } from './str-replace-tool.js';
import type { ToolContext } from './tool-context.js';
import { toolSessionOf } from './read-before-write.js';
import { describeError } from '../errors/error-inspection.js';
import { runToolInvocationWithOutcome } from './tool-invocation.js';
import type { ToolOutputListener } from './tool-output.js';
import { ToolErrorCode, toolCallResult, toolFailure, type ToolCallResult } from './tool-result.js';
import { TOOL_NAMES, isToolName, type ToolInputs, type ToolName } from './tool-schemas.js';
import { writeFileTool } from './write-file-tool.js';
import {
  processKillTool,
  processListTool,
  processOutputTool,
  processWriteTool,
} from './process-tools.js';

type ToolFunction<K extends ToolName> = (
  context: ToolContext,
  input: ToolInputs[K],
) => Promise<string>;

export const TOOL_FUNCTIONS: { readonly [K in ToolName]: ToolFunction<K> } = {
  bash: bashTool,
  ls: lsTool,
  glob: globTool,
  grep: grepTool,
  read_file: readFileTool,
  write_file: writeFileTool,
  str_replace: strReplaceTool,
  process_output: processOutputTool,
  process_write: processWriteTool,
  process_kill: processKillTool,
  process_list: processListTool,
};

/**
 * Runs one tool call as the model issued it: `name` and raw `input` straight from the model.
 * Always resolves to the tool's result text; nothing is thrown to the agent loop (an unknown tool,
 * invalid arguments and every failure become `Error: ...` results).
 */
export async function runTool(name: string, input: unknown, context: ToolContext): Promise<string> {
  if (!isToolName(name)) {
    return toolFailure(
      ToolErrorCode.UNKNOWN_TOOL,
      `Error: Unknown tool '${shownPath(String(name))}'. Available tools: ${TOOL_NAMES.join(', ')}`,
    );
  }
  const fn = TOOL_FUNCTIONS[name] as (context: ToolContext, input: unknown) => Promise<string>;
  try {
    return await fn(context, input);
  } catch (err) {
    // Each tool handles its own failures; this only guards the "never throws" promise.
    const detail = await maskHostPaths(context, undefined, describeError(err));
    return toolFailure(
      ToolErrorCode.UNEXPECTED,
      `Error: Unexpected error running ${name}: ${detail}`,
    );
  }
}

/** Per-call options of `runToolCall` and `ToolRunner.call`. */
export interface ToolCallOptions {
  /** Cancels this call (a framework's per-call abort signal), in addition to the context's. */
  signal?: AbortSignal | undefined;
  /**
   * Receives `bash`'s output while the command runs (the yield mode's too, until the call
   * returns), a line at a time per stream, rewritten as the result is (host paths masked, the
   * request's secrets redacted) and bounded: at most `bashOutputMaxChars` characters (at most
   * `MAX_STREAMED_OUTPUT_CHARS`, also when the cap is off), then one notice and nothing more.
   * Every chunk arrives before the call resolves; the result is the same with or without a
   * listener. Other tools never call it. See `ToolOutputListener`.
   */
  onOutput?: ToolOutputListener | undefined;
}

function combinedSignal(
  a: AbortSignal | undefined,
  b: AbortSignal | undefined,
): AbortSignal | undefined {
  if (!a) return b;
  if (!b || a === b) return a;
  return AbortSignal.any([a, b]);
}

/**
 * `runTool` with the outcome as data: the same text plus `isError` and an error code, decided by
 * the tool itself. Hosts, the MCP server and the CLI use this instead of inspecting the text.
 * Each call is its own tool invocation (one authorization decision).
 */
export async function runToolCall(
  name: string,
  input: unknown,
  context: ToolContext,
  options: ToolCallOptions = {},
): Promise<ToolCallResult> {
  const signal = combinedSignal(context.signal, options.signal);
  // A copy for the call's signal must keep the context's read marks: bind its session first.
  if (signal !== context.signal) toolSessionOf(context);
  const callContext: ToolContext = signal === context.signal ? context : { ...context, signal };
  const { value, failureCode, command } = await runToolInvocationWithOutcome(
    callContext,
    () => runTool(name, input, callContext),
    options.onOutput,
  );
  return toolCallResult(value, failureCode, command);
}
