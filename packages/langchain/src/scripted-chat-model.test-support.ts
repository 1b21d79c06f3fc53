import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';

export type ScriptedCall = { tool: string; args: Record<string, unknown> };
/** A step's calls, fixed or read from the prompt (as a model reads a process id it was given). */
export type ScriptedStep = ScriptedCall[] | ((messages: BaseMessage[]) => ScriptedCall[]);

/**
 * A chat model that plays a fixed script: each step's tool calls, then a final "done". It records
 * every prompt and the tools bound to it (as a provider would send them: OpenAI function format).
 * With `perConversation`, the step is read from the prompt (how many tool-calling turns it holds),
 * so one model plays the same script in several conversations at once.
 */
export class ScriptedChatModel extends BaseChatModel {
  readonly prompts: BaseMessage[][] = [];
  boundTools: ReturnType<typeof convertToOpenAITool>[] = [];
  #step = 0;

  constructor(
    private readonly script: ScriptedStep[],
    private readonly options: { perConversation?: boolean } = {},
  ) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(tools: Parameters<typeof convertToOpenAITool>[0][]): this {
    this.boundTools = tools.map((tool) => convertToOpenAITool(tool));
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.prompts.push(messages);
    const turn = this.options.perConversation
      ? messages.filter((m) => AIMessage.isInstance(m) && (m.tool_calls?.length ?? 0) > 0).length
      : this.#step;
    const scripted = this.script[turn];
    this.#step += 1;
    const calls = typeof scripted === 'function' ? scripted(messages) : scripted;
    const message = calls
      ? new AIMessage({
          content: '',
          tool_calls: calls.map((call, i) => ({
            id: `call-${this.#step}-${i}`,
            name: call.tool,
            args: call.args,
            type: 'tool_call' as const,
          })),
        })
      : new AIMessage('done');
    return {
      generations: [{ message, text: typeof message.content === 'string' ? message.content : '' }],
    };
  }
}
