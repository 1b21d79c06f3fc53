import { errorMessage, type Logger, type ToolOutputChunk } from '@sbx/core';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { LangChainModules } from './langchain-modules.js';

/** The name of the custom event (and the `type` of the stream writer's payload) sbx emits. */
export const SBX_TOOL_OUTPUT_EVENT = 'sbx_tool_output';

/** What a tool's streamed output looks like to a LangChain / LangGraph stream consumer. */
export interface SbxToolOutputEvent {
  readonly type: typeof SBX_TOOL_OUTPUT_EVENT;
  readonly tool: string;
  /** The tool call's id, when the tool ran as a tool call. */
  readonly toolCallId?: string;
  readonly stream: ToolOutputChunk['stream'];
  readonly text: string;
}

type StreamingConfig = RunnableConfig & {
  toolCall?: { id?: string };
  writer?: ((chunk: unknown) => void) | null;
};

/**
 * Passes a call's output on as it comes, two ways: LangGraph's stream writer (`streamMode:
 * 'custom'`), when the run has one, and a custom callback event (`streamEvents`:
 * `on_custom_event` named `sbx_tool_output`). Callback events are dispatched in order, one after
 * the other; `settled()` waits for the last, so every event is out before the tool's result.
 */
export function toolOutputEvents(
  modules: LangChainModules,
  config: StreamingConfig,
  tool: string,
  logger: Logger | undefined,
): { onOutput: (chunk: ToolOutputChunk) => void; settled: () => Promise<void> } {
  const writer = typeof config.writer === 'function' ? config.writer : undefined;
  const toolCallId = config.toolCall?.id;
  let chain: Promise<void> = Promise.resolve();
  let failed = false;
  return {
    onOutput: (chunk) => {
      const event: SbxToolOutputEvent = {
        type: SBX_TOOL_OUTPUT_EVENT,
        tool,
        ...(toolCallId !== undefined ? { toolCallId } : {}),
        stream: chunk.stream,
        text: chunk.text,
      };
      writer?.(event);
      if (failed) return;
      chain = chain.then(() =>
        modules.dispatch.dispatchCustomEvent(SBX_TOOL_OUTPUT_EVENT, event, config).catch((err) => {
          // Outside a run (no parent run id) there is nowhere to send it: said once, then no more.
          failed = true;
          logger?.warn('a tool output event could not be dispatched; no more are sent', {
            tool,
            error: errorMessage(err),
          });
        }),
      );
    },
    settled: () => chain,
  };
}
