import {
  Usage,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
} from '@openai/agents';

export type ScriptedCall = { tool: string; args: Record<string, unknown> | string };
/** A step's calls, fixed or read from the request (as a model reads a process id it was given). */
export type ScriptedStep = ScriptedCall[] | ((request: ModelRequest) => ScriptedCall[]);

/**
 * An Agents `Model` that plays a fixed script of tool calls, then answers "done". With
 * `perConversation` the step is read from the request (how many tool calls its input holds), so
 * one model plays the script in several runs at once.
 */
export class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  #step = 0;

  constructor(
    private readonly script: ScriptedStep[],
    private readonly options: { perConversation?: boolean } = {},
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const input = Array.isArray(request.input) ? request.input : [];
    const turn = this.options.perConversation
      ? input.filter((item) => (item as { type?: string }).type === 'function_call').length
      : this.#step;
    const scripted = this.script[turn];
    this.#step += 1;
    const calls = typeof scripted === 'function' ? scripted(request) : scripted;
    const usage = new Usage();
    if (!calls) {
      return {
        usage,
        output: [
          {
            type: 'message',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'done' }],
          },
        ],
      };
    }
    return {
      usage,
      output: calls.map((call, i) =>
        // The hosted apply_patch tool (what a SandboxAgent's filesystem capability offers) is
        // called with an apply_patch_call item carrying the operation.
        call.tool === 'apply_patch' && typeof call.args !== 'string'
          ? {
              type: 'apply_patch_call' as const,
              callId: `call-${this.#step}-${i}`,
              status: 'completed' as const,
              operation: call.args as never,
            }
          : {
              type: 'function_call' as const,
              callId: `call-${this.#step}-${i}`,
              name: call.tool,
              status: 'completed' as const,
              arguments: typeof call.args === 'string' ? call.args : JSON.stringify(call.args),
            },
      ),
    };
  }

  /** The same script as one streamed response per step (for `run(..., { stream: true })`). */
  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const response = await this.getResponse(request);
    yield {
      type: 'response_done',
      response: {
        id: `response-${this.#step}`,
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        output: response.output as never,
      },
    };
  }
}
