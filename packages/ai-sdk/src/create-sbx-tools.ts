import type { ToolInputs, ToolName, ToolRunnerOptions } from '@sbx/core';
import { describingToolSchema } from '@sbx/core/internal';
import type { FlexibleSchema, Tool } from 'ai';
import { runIdentityOf, sbxRunContextSchema, type SbxRunContext } from './sbx-run-context.js';
import { SbxToolError } from './sbx-tool-error.js';
import { streamedCall } from './streamed-call.js';
import { ThreadRunners } from '@sbx/core';

/**
 * A tool's arguments as the model is asked to send them: sbx's input type, each optional field
 * also `null` (strict function calling sends every field, `null` meaning "omitted"). sbx checks
 * the arguments inside the call, so a `tool-error` part may carry an input that does not match.
 */
export type SbxToolInput<K extends ToolName> = {
  [P in keyof ToolInputs[K]]:
    ToolInputs[K][P] | (undefined extends ToolInputs[K][P] ? null : never);
};

/**
 * One sbx tool as an AI SDK tool: typed arguments, the tool's text as output, the run's thread
 * and user as its context: optional by default (`C = SbxRunContext | undefined`, so ai 7 asks
 * for no `toolsContext`), required with `threadFromContext: true`, none with
 * `threadFromContext: false` (`C = unknown`).
 */
export type SbxTool<K extends ToolName, C = SbxRunContext | undefined> = Tool<
  SbxToolInput<K>,
  string,
  C
>;

/** The seven tools offered unless `tools` says otherwise. */
export type DefaultSbxToolName =
  'bash' | 'ls' | 'glob' | 'grep' | 'read_file' | 'write_file' | 'str_replace';

/**
 * The tools named `N`, keyed by name. Without a `tools` option `N` is the seven: the four process
 * tools `config.processTools` adds are there at run time but not in the type (list them in
 * `tools` to have them typed).
 */
export type SbxToolSet<N extends ToolName = DefaultSbxToolName, C = SbxRunContext | undefined> = {
  [K in N]: SbxTool<K, C>;
};

/**
 * Options: a new tool context (`provider`, `threadId`, `userId`, `config`, `authorize`,
 * `leaseManager`, ...) or an existing `context`, plus `tools` (which to offer: by default the
 * seven, and the four process tools when `config.processTools` is on), `strict` (strict-mode
 * schemas and the tools' `strict` flag, for providers that enforce them) and `threadFromContext`.
 */
export type CreateSbxToolsOptions = ToolRunnerOptions & {
  /**
   * Whether a call's tool context picks its thread. By default (unset) each call runs in the
   * thread (and for the user) its tool context names when it names one
   * (`toolsContext: sbxToolsContext(tools, { threadId, userId })` with ai 7,
   * `experimental_context: { threadId, userId }` with ai 6), else in `threadId` / `userId` given
   * here; each thread has its own sandbox and read-before-write marks. The context is typed
   * optional, so a call without one type-checks.
   *
   * `false`: every call runs in the thread given here, whatever the context says (the tools
   * declare no context).
   *
   * @deprecated `true`, the former opt-in: reads the context as the default does, and types it as
   *   required, so ai 7 asks for `toolsContext` on every call.
   */
  threadFromContext?: boolean;
};

function aiSdkTool<K extends ToolName>(
  runners: ThreadRunners,
  name: K,
  strict: boolean | undefined,
  threadFromContext: boolean,
): SbxTool<K> {
  const definition = runners.base.definitions.find((d) => d.name === name);
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
    // Only when the context is read: without a schema ai 7 offers the tools no context.
    ...(threadFromContext ? { contextSchema: sbxRunContextSchema } : {}),
    execute: (input, options) => {
      const runner = threadFromContext ? runners.for(runIdentityOf(options)) : runners.base;
      // bash's output is shown while it runs, as preliminary results; the other tools answer at
      // once.
      if (name === 'bash') return streamedCall(runner, name, input, options.abortSignal);
      return runner.call(name, input, { signal: options.abortSignal }).then((result) => {
        if (result.isError) throw new SbxToolError(result);
        return result.text;
      });
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
 * Every call runs through `runToolCall` on the tool context of its thread: the one the call's
 * context names when it names one (`toolsContext: sbxToolsContext(tools, { threadId, userId })`
 * with ai 7, `experimental_context: { threadId, userId }` with ai 6), else the one given here;
 * each thread has its own sandbox and read-before-write marks, so one tool set serves many
 * conversations. A failure is thrown as
 * `SbxToolError`, which the SDK turns into a `tool-error` the model reads; the SDK's abort signal
 * cancels the sandbox call. Needs no runtime import of `ai` (it is a peer for the types only).
 */
export function createSbxTools<const N extends ToolName = DefaultSbxToolName>(
  options: CreateSbxToolsOptions & { tools?: readonly N[]; threadFromContext: true },
): SbxToolSet<N, SbxRunContext>;
export function createSbxTools<const N extends ToolName = DefaultSbxToolName>(
  options: CreateSbxToolsOptions & { tools?: readonly N[]; threadFromContext: false },
): SbxToolSet<N, unknown>;
export function createSbxTools<const N extends ToolName = DefaultSbxToolName>(
  options: CreateSbxToolsOptions & { tools?: readonly N[] },
): SbxToolSet<N>;
export function createSbxTools(options: CreateSbxToolsOptions): object {
  const { threadFromContext, ...runnerOptions } = options;
  const runners = new ThreadRunners(runnerOptions);
  const tools: Partial<Record<ToolName, SbxTool<ToolName>>> = {};
  for (const { name } of runners.base.definitions) {
    tools[name] = aiSdkTool(runners, name, options.strict, threadFromContext !== false);
  }
  return tools;
}
