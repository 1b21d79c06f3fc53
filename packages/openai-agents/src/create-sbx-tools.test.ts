import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, run, tool, type ModelRequest } from '@openai/agents';
import {
  ALL_TOOL_NAMES,
  SandboxAuthorizationError,
  getToolDefinitions,
  silentLogger,
} from '@sbx/core';
import { LocalSandboxProvider } from '@sbx/local';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSbxTools } from './create-sbx-tools.js';
import { ScriptedModel, type ScriptedStep } from './scripted-model.test-support.js';

type OutputItem = { type: string; name?: string; output?: unknown; customData?: unknown };

function toolOutputs(
  items: readonly { rawItem: unknown; type: string; customData?: unknown }[],
): OutputItem[] {
  return items
    .filter((i) => i.type === 'tool_call_output_item')
    .map((i) => ({ ...(i.rawItem as OutputItem), customData: i.customData }));
}

function outputText(item: OutputItem | undefined): string {
  const output = item?.output as { type?: string; text?: string } | string | undefined;
  return typeof output === 'string' ? output : (output?.text ?? '');
}

const FILE = '/mnt/user-data/workspace/hello.py';

describe('@sbx/openai-agents with the real Agents SDK and a scripted model', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-agents-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  async function runAgent(script: ScriptedStep[], options = {}, signal?: AbortSignal) {
    const model = new ScriptedModel(script);
    const tools = await createSbxTools({ provider, userId: 'alice', threadId: 't1', ...options });
    const agent = new Agent({ name: 'coder', instructions: 'work', model, tools });
    const result = await run(agent, 'go', { maxTurns: 10, ...(signal ? { signal } : {}) });
    return { model, result, outputs: toolOutputs(result.newItems) };
  }

  it('runs a multi-step loop that writes, reads, edits and runs a file (strict schemas)', async () => {
    const { model, result, outputs } = await runAgent([
      [{ tool: 'write_file', args: { path: FILE, content: 'print("hello")\n' } }],
      [{ tool: 'read_file', args: { path: FILE, start_line: null, end_line: null } }],
      [{ tool: 'str_replace', args: { path: FILE, old_str: 'hello', new_str: 'sbx' } }],
      [{ tool: 'bash', args: { command: 'cat hello.py; echo ran' } }],
    ]);
    expect(outputs.map((o) => [o.name, outputText(o)])).toEqual([
      ['write_file', 'OK'],
      ['read_file', 'print("hello")\n'],
      ['str_replace', 'OK'],
      ['bash', 'print("sbx")\nran\n'],
    ]);
    expect(result.finalOutput).toBe('done');
    // The SDK sent the strict-mode schemas with strict: true.
    const readFile = model.requests[0]?.tools.find((t) => t.name === 'read_file') as {
      strict?: boolean;
      parameters?: { required?: string[] };
    };
    expect(readFile.strict).toBe(true);
    expect(readFile.parameters?.required).toEqual([
      'description',
      'path',
      'start_line',
      'end_line',
    ]);
  });

  it('takes getToolDefinitions() output as it is, plain or strict (no hidden Standard Schema marker)', () => {
    for (const strict of [false, true] as const) {
      for (const definition of getToolDefinitions({ strict })) {
        const made = strict
          ? tool({
              name: definition.name,
              description: definition.description,
              parameters: definition.inputSchema as never,
              strict: true,
              execute: () => 'x',
            })
          : tool({
              name: definition.name,
              description: definition.description,
              parameters: definition.inputSchema as never,
              strict: false,
              execute: () => 'x',
            });
        expect(made.parameters).toEqual(definition.inputSchema);
      }
    }
  });

  it('strict: false sends the plain schemas', async () => {
    const { model } = await runAgent([], { strict: false });
    const readFile = model.requests[0]?.tools.find((t) => t.name === 'read_file') as {
      strict?: boolean;
      parameters?: { required?: string[] };
    };
    expect(readFile.strict).toBe(false);
    expect(readFile.parameters?.required).toEqual(['path']);
  });

  it('a bad argument reaches the model as sbx’s message, flagged as an error in custom data', async () => {
    const { outputs } = await runAgent([[{ tool: 'read_file', args: { path: 7 } }]]);
    expect(outputText(outputs[0])).toBe(
      'Error: Invalid arguments for read_file: path: expected string, received number',
    );
    expect(outputs[0]?.customData).toEqual({ sbx: { isError: true, code: 'INVALID_ARGUMENTS' } });
  });

  it('a file whose text starts with "Error:" is a success', async () => {
    const { outputs } = await runAgent([
      [{ tool: 'write_file', args: { path: FILE, content: 'Error: just data\n' } }],
      [{ tool: 'read_file', args: { path: FILE } }],
    ]);
    expect(outputText(outputs[1])).toBe('Error: just data\n');
    expect(outputs[1]?.customData).toEqual({ sbx: { isError: false } });
  });

  it('an authorization deny reaches the model and acquires nothing', async () => {
    let acquires = 0;
    const acquire = provider.acquire.bind(provider);
    provider.acquire = (options) => {
      acquires += 1;
      return acquire(options);
    };
    const { outputs } = await runAgent([[{ tool: 'ls', args: { path: '/mnt/user-data' } }]], {
      authorize: async () => {
        throw new SandboxAuthorizationError(undefined, 'guest');
      },
    });
    expect(outputText(outputs[0])).toMatch(/^Error: Sandbox execution is not permitted/);
    expect(outputs[0]?.customData).toEqual({
      sbx: { isError: true, code: 'SANDBOX_AUTHORIZATION' },
    });
    expect(acquires).toBe(0);
  });

  it('with processTools, a yielded server is fed, listed and killed through the process tools', async () => {
    // The process id the last tool output handed the model.
    const processIdIn = (request: ModelRequest): string =>
      /process_id=\\"(p\d+)\\"/.exec(JSON.stringify(request.input))?.[1] ?? 'none';
    const { model, outputs } = await runAgent(
      [
        [
          {
            tool: 'bash',
            args: {
              command: 'echo ready; while read l; do echo "got:$l"; done',
              yield_time_ms: 300,
            },
          },
        ],
        (request) => [
          {
            tool: 'process_write',
            args: { process_id: processIdIn(request), input: 'ping\n', wait_ms: 5_000 },
          },
        ],
        (request) => [
          { tool: 'process_list', args: {} },
          { tool: 'process_kill', args: { process_id: processIdIn(request), signal: null } },
        ],
      ],
      { config: { processTools: true } },
    );
    expect(model.requests[0]?.tools.map((t) => t.name)).toEqual([...ALL_TOOL_NAMES]);
    expect(outputs.map((o) => [o.name, o.customData])).toEqual([
      ['bash', { sbx: { isError: false } }],
      ['process_write', { sbx: { isError: false } }],
      ['process_list', { sbx: { isError: false } }],
      ['process_kill', { sbx: { isError: false } }],
    ]);
    expect(outputText(outputs[0])).toMatch(/ready[\s\S]*process_id="p\d+"/);
    expect(outputText(outputs[1])).toContain('got:ping');
    expect(outputText(outputs[2])).toMatch(/^p\d+\trunning\t/m);
    expect(outputText(outputs[3])).toMatch(/was ended by SIGTERM\]$/);
  });

  it('the run’s abort signal reaches the sandbox call and kills the command', async () => {
    const controller = new AbortController();
    const pending = runAgent(
      [[{ tool: 'bash', args: { command: 'sleep 30.456' } }]],
      {},
      controller.signal,
    );
    setTimeout(() => controller.abort(), 200);
    await expect(pending).rejects.toThrow();
    const tools = await createSbxTools({ provider, threadId: 't1' });
    const bash = tools.find((t) => t.name === 'bash')!;
    const check = await bash.invoke(
      undefined as never,
      JSON.stringify({
        command:
          "for i in $(seq 50); do pgrep -f 'sleep 30[.]456' >/dev/null || { echo gone; exit 0; }; sleep 0.1; done; echo alive",
      }),
    );
    expect(check).toBe('gone\n');
  });
});

describe('@sbx/openai-agents: one agent, many threads by run context', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-agents-threads-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  const MINE = '/mnt/user-data/workspace/mine.txt';
  /** The run's first user message: the name it writes into its workspace. */
  const firstWords = (request: ModelRequest): string =>
    typeof request.input === 'string'
      ? request.input
      : String((request.input[0] as { content?: unknown }).content ?? '');

  it('serves two runs at once, each in the thread its context names', async () => {
    const model = new ScriptedModel(
      [
        (request) => [{ tool: 'write_file', args: { path: MINE, content: firstWords(request) } }],
        [{ tool: 'bash', args: { command: 'ls; cat mine.txt' } }],
        [{ tool: 'read_file', args: { path: MINE } }],
      ],
      { perConversation: true },
    );
    // No flag: a thread in the run context is used whenever one is there.
    const tools = await createSbxTools({ provider, userId: 'alice', threadId: 'unused' });
    const agent = new Agent<{ threadId: string }>({ name: 'coder', model, tools });
    const converse = async (threadId: string) => {
      const result = await run(agent, threadId, { maxTurns: 10, context: { threadId } });
      return toolOutputs(result.newItems).map((o) => outputText(o));
    };
    const [a, b] = await Promise.all([converse('thread-a'), converse('thread-b')]);
    expect(a).toEqual(['OK', 'mine.txt\nthread-a', 'thread-a']);
    expect(b).toEqual(['OK', 'mine.txt\nthread-b', 'thread-b']);
    const unused = provider.get(await provider.acquire({ threadId: 'unused', userId: 'alice' }));
    expect(await unused?.listDir('/mnt/user-data/workspace', { maxDepth: 1 })).toEqual([]);
  });

  it('a bad thread id in the run context reaches the model as an error and acquires nothing', async () => {
    let acquires = 0;
    const acquire = provider.acquire.bind(provider);
    provider.acquire = (options) => {
      acquires += 1;
      return acquire(options);
    };
    const tools = await createSbxTools({ provider, threadId: 't1' });
    for (const threadId of [['.', '.'].join(''), 'x'.repeat(300), 42]) {
      const model = new ScriptedModel([[{ tool: 'ls', args: { path: '/mnt/user-data' } }]]);
      const agent = new Agent<{ threadId: unknown }>({ name: 'coder', model, tools });
      const result = await run(agent, 'go', { maxTurns: 5, context: { threadId } });
      const [output] = toolOutputs(result.newItems);
      expect(output?.customData).toEqual({ sbx: { isError: true, code: 'INVALID_ARGUMENT' } });
    }
    expect(acquires).toBe(0);
  });

  it('a run without a thread in its context runs in the thread given at creation', async () => {
    const tools = await createSbxTools({ provider, userId: 'alice', threadId: 'configured' });
    for (const context of [undefined, { tenant: 'acme' }]) {
      const model = new ScriptedModel([
        [{ tool: 'bash', args: { command: 'printf fallback >> w.txt' } }],
      ]);
      const agent = new Agent<unknown>({ name: 'coder', model, tools });
      await run(agent, 'go', { maxTurns: 5, ...(context ? { context } : {}) });
    }
    const configured = provider.get(
      await provider.acquire({ threadId: 'configured', userId: 'alice' }),
    );
    expect(await configured?.readFile('/mnt/user-data/workspace/w.txt')).toBe('fallbackfallback');
  });

  it('threadFromContext: false runs every call in the thread given at creation', async () => {
    const model = new ScriptedModel([[{ tool: 'bash', args: { command: 'printf here > w.txt' } }]]);
    const tools = await createSbxTools({ provider, threadId: 'bound', threadFromContext: false });
    const agent = new Agent<{ threadId: string }>({ name: 'coder', model, tools });
    await run(agent, 'go', { maxTurns: 5, context: { threadId: 'elsewhere' } });
    const bound = provider.get(await provider.acquire({ threadId: 'bound' }));
    expect(await bound?.readFile('/mnt/user-data/workspace/w.txt')).toBe('here');
  });
});
describe('@sbx/openai-agents streams bash output to onToolOutput', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-agents-stream-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('a streamed run: the first line arrives before the tool_output event', async () => {
    // The command waits (bounded) for a file the test writes only once it saw the first line.
    const command =
      'echo first; for i in $(seq 400); do [ -f go ] && break; sleep 0.05; done; echo second';
    const model = new ScriptedModel([[{ tool: 'bash', args: { command } }]]);
    const seen: string[] = [];
    const openGate = async () => {
      const sandbox = provider.get(await provider.acquire({ threadId: 'st1' }));
      await sandbox?.writeFile('/mnt/user-data/workspace/go', '');
    };
    const tools = await createSbxTools({
      provider,
      threadId: 'st1',
      onToolOutput: (event) => {
        expect(event).toMatchObject({ tool: 'bash', callId: 'call-1-0', stream: 'stdout' });
        seen.push(`chunk:${event.text}`);
        if (event.text === 'first\n') void openGate();
      },
    });
    const agent = new Agent({ name: 'coder', model, tools });
    const result = await run(agent, 'go', { maxTurns: 5, stream: true });
    for await (const event of result) {
      if (event.type === 'run_item_stream_event' && event.name === 'tool_output') {
        seen.push('tool_output');
      }
    }
    await result.completed;
    expect(seen).toEqual(['chunk:first\n', 'chunk:second\n', 'tool_output']);
  });
});

describe('the README example', () => {
  it('runs as written (≤ 15 lines) with a scripted model in place of the real one', async () => {
    const { SCRIPTED_MODEL, runReadmeExample } =
      await import('../../../tools/testing/readme-example.js');
    const model = new ScriptedModel([[{ tool: 'bash', args: { command: 'echo hello' } }]]);
    const lines = await runReadmeExample(join(import.meta.dirname, '..', 'README.md'), {
      replacements: [`  model: ${SCRIPTED_MODEL},`],
      model,
    });
    expect(lines).toBeLessThanOrEqual(15);
    expect(JSON.stringify(model.requests.at(-1)?.input)).toContain('hello\\n');
  });
});
