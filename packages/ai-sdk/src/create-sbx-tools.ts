import {
  createToolRunner,
  type ToolInputs,
  type ToolName,
  type ToolRunner,
  type ToolRunnerOptions,
} from '@sbx/core';
import { describingToolSchema } from '@sbx/core/internal';
import type { FlexibleSchema, Tool } from 'ai';
import { SbxToolError } from './sbx-tool-error.js';

/**
 * A tool's arguments as the model is asked to send them: sbx's input type, each optional field
 * also `null` (strict function calling sends every field, `null` meaning "omitted"). sbx checks
 * the arguments inside the call, so a `tool-error` part may carry an input that does not match.
 */
export type SbxToolInput<K extends ToolName> = {
  [P in keyof ToolInputs[K]]:
    ToolInputs[K][P] | (undefined extends ToolInputs[K][P] ? null : never);
};

/** One sbx tool as an AI SDK tool: typed arguments, the tool's text as output. */
export type SbxTool<K extends ToolName> = Tool<SbxToolInput<K>, string>;

/** One AI SDK tool per sbx tool, keyed by the tool's name. */
export type SbxToolSet = { [K in ToolName]?: SbxTool<K> };

/**
 * Options: a new tool context (`provider`, `threadId`, `userId`, `config`, `authorize`,
 * `leaseManager`, ...) or an existing `context`, plus `tools` (which to offer: by default the
 * seven, and the four process tools when `config.processTools` is on) and `strict` (strict-mode
 * schemas and the tools' `strict` flag, for providers that enforce them).
 */
export type CreateSbxToolsOptions = ToolRunnerOptions;

function aiSdkTool<K extends ToolName>(
  runner: ToolRunner,
  name: K,
  strict: boolean | undefined,
): SbxTool<K> {
  const definition = runner.definitions.find((d) => d.name === name);
  if (!definition) throw new Error(`no definition for ${name}`);
  return {
    description: definition.description,
    // Describes the arguments to the model; sbx validates them inside the call, so a bad one
    // comes back as sbx's message instead of the SDK's schema error. The type is what the model
    // is asked for (the schema itself accepts every value).
    inputSchema: describingToolSchema(definition) as FlexibleSchema<SbxToolInput<K>>,
    // Only when asked: an explicit `false` is passed on too, `undefined` leaves the provider's
    // default.
    ...(strict !== undefined ? { strict } : {}),
    execute: async (input, { abortSignal }) => {
      const result = await runner.call(name, input, { signal: abortSignal });
      if (result.isError) throw new SbxToolError(result);
      return result.text;
    },
    // Tool results are plain text for the model, as the tools write them.
    toModelOutput: ({ output }) => ({ type: 'text', value: output }),
  };
}

/**
 * The sbx tools as a Vercel AI SDK `ToolSet`, for `generateText` / `streamText` / agents:
 *
 *     const tools = createSbxTools({ provider, threadId: 't1' });
 *     await generateText({ model, tools, stopWhen: stepCountIs(10), prompt });
 *
 * Every call runs through `runToolCall` on one shared tool context: the same sandbox, lease owner,
 * read-before-write marks and authorization hook as `runTool`. A failure is thrown as
 * `SbxToolError`, which the SDK turns into a `tool-error` the model reads; the SDK's abort signal
 * cancels the sandbox call. Needs no runtime import of `ai` (it is a peer for the types only).
 */
export function createSbxTools(options: CreateSbxToolsOptions): SbxToolSet {
  const runner = createToolRunner(options);
  const tools: SbxToolSet = {};
  const set = <K extends ToolName>(name: K) => {
    (tools as Record<K, SbxTool<K>>)[name] = aiSdkTool(runner, name, options.strict);
  };
  for (const definition of runner.definitions) set(definition.name);
  return tools;
}
