import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolMessage, type BaseMessage } from '@langchain/core/messages';
import {
  ALL_TOOL_NAMES,
  SandboxAuthorizationError,
  getToolDefinitions,
  silentLogger,
} from '@sbx/core';
import { LocalSandboxProvider } from '@sbx/local';
import { MemorySaver } from '@langchain/langgraph';
import { createAgent } from 'langchain';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSbxTools, SbxToolError } from './create-sbx-tools.js';
import { ScriptedChatModel, type ScriptedStep } from './scripted-chat-model.test-support.js';

const FILE = '/mnt/user-data/workspace/hello.py';

function toolMessages(messages: BaseMessage[]): ToolMessage[] {
  return messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
}

describe('@sbx/langchain with real LangChain and a scripted chat model', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-langchain-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  async function runAgent(script: ScriptedStep[], options = {}, signal?: AbortSignal) {
    const model = new ScriptedChatModel(script);
    const tools = await createSbxTools({ provider, userId: 'alice', threadId: 't1', ...options });
    const agent = createAgent({ model, tools });
    const state = await agent.invoke(
      { messages: [{ role: 'user', content: 'go' }] },
      signal ? { signal } : {},
    );
    return { model, messages: state.messages as BaseMessage[] };
  }

  it('runs a multi-step loop that writes, reads, edits and runs a file', async () => {
    const { model, messages } = await runAgent([
      [{ tool: 'write_file', args: { path: FILE, content: 'print("hello")\n' } }],
      [{ tool: 'read_file', args: { path: FILE } }],
      [{ tool: 'str_replace', args: { path: FILE, old_str: 'hello', new_str: 'sbx' } }],
      [{ tool: 'bash', args: { command: 'cat hello.py; echo ran' } }],
    ]);
    expect(toolMessages(messages).map((m) => [m.name, m.status, m.content])).toEqual([
      ['write_file', 'success', 'OK'],
      ['read_file', 'success', 'print("hello")\n'],
      ['str_replace', 'success', 'OK'],
      ['bash', 'success', 'print("sbx")\nran\n'],
    ]);
    // The model was offered sbx's own JSON schemas.
    const readFile = model.boundTools.find((t) => t.function.name === 'read_file');
    const plain = getToolDefinitions({ tools: ['read_file'] })[0]!.inputSchema;
    expect(readFile?.function.parameters).toMatchObject({
      properties: plain.properties,
      required: plain.required,
      additionalProperties: false,
    });
  });

  it('a bad argument reaches sbx and comes back as an error ToolMessage with sbx’s text', async () => {
    const { model, messages } = await runAgent([[{ tool: 'read_file', args: { path: 7 } }]]);
    const [message] = toolMessages(messages);
    expect(message?.status).toBe('error');
    expect(message?.content).toBe(
      'Error: Invalid arguments for read_file: path: expected string, received number',
    );
    expect(model.prompts).toHaveLength(2);
  });

  it('a file whose text starts with "Error:" is a success', async () => {
    const { messages } = await runAgent([
      [{ tool: 'write_file', args: { path: FILE, content: 'Error: just data\n' } }],
      [{ tool: 'read_file', args: { path: FILE } }],
    ]);
    expect(toolMessages(messages).map((m) => m.status)).toEqual(['success', 'success']);
  });

  it('an authorization deny is an error ToolMessage and acquires nothing', async () => {
    let acquires = 0;
    const acquire = provider.acquire.bind(provider);
    provider.acquire = (options) => {
      acquires += 1;
      return acquire(options);
    };
    const { messages } = await runAgent([[{ tool: 'ls', args: { path: '/mnt/user-data' } }]], {
      authorize: async () => {
        throw new SandboxAuthorizationError(undefined, 'guest');
      },
    });
    const [message] = toolMessages(messages);
    expect(message?.status).toBe('error');
    expect(message?.metadata).toMatchObject({ sbx_error_code: 'SANDBOX_AUTHORIZATION' });
    expect(acquires).toBe(0);
  });

  it('the run’s abort signal reaches the sandbox call and kills the command', async () => {
    const tools = await createSbxTools({ provider, threadId: 't1' });
    const bash = tools.find((t) => t.name === 'bash')!;
    const controller = new AbortController();
    const call = bash.invoke(
      { id: 'call-1', name: 'bash', args: { command: 'sleep 30.123' }, type: 'tool_call' },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 100);
    await expect(call).rejects.toThrow();
    // LangChain rejects an aborted call by itself; the sleep must be gone too (its death is not
    // an event we can await, hence the bounded check inside the sandbox).
    const check = await bash.invoke({
      id: 'call-2',
      name: 'bash',
      args: {
        command:
          "for i in $(seq 50); do pgrep -f 'sleep 30[.]123' >/dev/null || { echo gone; exit 0; }; sleep 0.1; done; echo alive",
      },
      type: 'tool_call',
    });
    expect((check as ToolMessage).content).toBe('gone\n');
  });

  it('with processTools, a yielded server is fed, listed and killed through the process tools', async () => {
    // The process id the last tool message handed the model.
    const processIdIn = (messages: BaseMessage[]): string =>
      /process_id="(p\d+)"/.exec(
        toolMessages(messages)
          .map((m) => String(m.content))
          .join('\n'),
      )?.[1] ?? 'none';
    const { model, messages } = await runAgent(
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
        (prompt) => [
          {
            tool: 'process_write',
            args: { process_id: processIdIn(prompt), input: 'ping\n', wait_ms: 5_000 },
          },
        ],
        (prompt) => [
          { tool: 'process_list', args: {} },
          { tool: 'process_kill', args: { process_id: processIdIn(prompt) } },
        ],
      ],
      { config: { processTools: true } },
    );
    expect(model.boundTools.map((t) => t.function.name)).toEqual([...ALL_TOOL_NAMES]);
    const results = toolMessages(messages).map((m) => [m.name, m.status, String(m.content)]);
    expect(results.map(([name, status]) => `${name}:${status}`)).toEqual([
      'bash:success',
      'process_write:success',
      'process_list:success',
      'process_kill:success',
    ]);
    expect(results[0]![2]).toMatch(/ready[\s\S]*process_id="p\d+"/);
    expect(results[1]![2]).toContain('got:ping');
    expect(results[2]![2]).toMatch(/^p\d+\trunning\t/m);
    expect(results[3]![2]).toMatch(/was ended by SIGTERM\]$/);
  });

  it('without processTools only the seven are bound, and bash takes no yield_time_ms', async () => {
    const { model } = await runAgent([]);
    expect(model.boundTools).toHaveLength(7);
    const bash = model.boundTools.find((t) => t.function.name === 'bash');
    const parameters = bash?.function.parameters as { properties?: object } | undefined;
    expect(Object.keys(parameters?.properties ?? {})).not.toContain('yield_time_ms');
  });

  it('a direct invoke outside a tool call throws SbxToolError with the code', async () => {
    const tools = await createSbxTools({ provider, threadId: 't1' });
    const read = tools.find((t) => t.name === 'read_file')!;
    await expect(read.invoke({ path: '/mnt/user-data/workspace/missing.txt' })).rejects.toSatisfy(
      (err: unknown) => err instanceof SbxToolError && err.code === 'NOT_FOUND',
    );
  });
});

describe('@sbx/langchain: one graph, many threads (configurable.thread_id)', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-langchain-threads-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  const MINE = '/mnt/user-data/workspace/mine.txt';
  /** The conversation's first user message: the name it writes into its workspace. */
  const firstWords = (messages: BaseMessage[]) => String(messages[0]?.content ?? '');

  it('serves two threads at once from a graph compiled once, each seeing only its own files', async () => {
    const model = new ScriptedChatModel(
      [
        (messages) => [{ tool: 'write_file', args: { path: MINE, content: firstWords(messages) } }],
        [{ tool: 'bash', args: { command: 'ls; cat mine.txt' } }],
        [{ tool: 'read_file', args: { path: MINE } }],
      ],
      { perConversation: true },
    );
    const tools = await createSbxTools({ provider, userId: 'alice', threadId: 'unused' });
    const agent = createAgent({ model, tools, checkpointer: new MemorySaver() });
    const converse = async (threadId: string) => {
      const state = await agent.invoke(
        { messages: [{ role: 'user', content: threadId }] },
        { configurable: { thread_id: threadId } },
      );
      return toolMessages(state.messages as BaseMessage[]).map((m) => [m.status, m.content]);
    };
    const [a, b] = await Promise.all([converse('thread-a'), converse('thread-b')]);
    expect(a).toEqual([
      ['success', 'OK'],
      ['success', 'mine.txt\nthread-a'],
      ['success', 'thread-a'],
    ]);
    expect(b).toEqual([
      ['success', 'OK'],
      ['success', 'mine.txt\nthread-b'],
      ['success', 'thread-b'],
    ]);
    // The construction-time thread was never used.
    const unused = provider.get(await provider.acquire({ threadId: 'unused', userId: 'alice' }));
    expect(await unused?.listDir('/mnt/user-data/workspace', { maxDepth: 1 })).toEqual([]);
  });

  it('takes the user from configurable.user_id', async () => {
    const tools = await createSbxTools({ provider, threadId: 't1' });
    const bash = tools.find((t) => t.name === 'bash')!;
    await bash.invoke(
      { id: 'c1', name: 'bash', args: { command: 'printf bob > who.txt' }, type: 'tool_call' },
      { configurable: { thread_id: 't9', user_id: 'bob' } },
    );
    const bobs = provider.get(await provider.acquire({ threadId: 't9', userId: 'bob' }));
    expect(await bobs?.readFile('/mnt/user-data/workspace/who.txt')).toBe('bob');
  });

  it('a thread id outside the id rule, or not a string, is an error ToolMessage and acquires nothing', async () => {
    let acquires = 0;
    const acquire = provider.acquire.bind(provider);
    provider.acquire = (options) => {
      acquires += 1;
      return acquire(options);
    };
    const tools = await createSbxTools({ provider, threadId: 't1' });
    const ls = tools.find((t) => t.name === 'ls')!;
    for (const threadId of [['.', '.'].join(''), 'x'.repeat(300), 42]) {
      const message = (await ls.invoke(
        { id: 'c1', name: 'ls', args: { path: '/mnt/user-data' }, type: 'tool_call' },
        { configurable: { thread_id: threadId } },
      )) as ToolMessage;
      expect(message.status).toBe('error');
      expect(message.metadata).toMatchObject({ sbx_error_code: 'INVALID_ARGUMENT' });
    }
    expect(acquires).toBe(0);
  });

  it('threadFromContext: false runs every call in the thread given at creation', async () => {
    const tools = await createSbxTools({ provider, threadId: 'bound', threadFromContext: false });
    const bash = tools.find((t) => t.name === 'bash')!;
    await bash.invoke(
      { id: 'c1', name: 'bash', args: { command: 'printf here > where.txt' }, type: 'tool_call' },
      { configurable: { thread_id: 'elsewhere' } },
    );
    const bound = provider.get(await provider.acquire({ threadId: 'bound' }));
    expect(await bound?.readFile('/mnt/user-data/workspace/where.txt')).toBe('here');
  });
});

describe('@sbx/langchain streams bash output', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-langchain-stream-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  // Waits (bounded) for a file the test writes only once it saw the first line.
  const GATED =
    'echo first; for i in $(seq 400); do [ -f go ] && break; sleep 0.05; done; echo second';

  async function openGate(threadId: string) {
    const sandbox = provider.get(await provider.acquire({ threadId }));
    await sandbox?.writeFile('/mnt/user-data/workspace/go', '');
  }

  it('LangGraph streamMode "custom" gets the first line before the tool’s result', async () => {
    const model = new ScriptedChatModel([[{ tool: 'bash', args: { command: GATED } }]]);
    const tools = await createSbxTools({ provider, threadId: 's1' });
    const agent = createAgent({ model, tools });
    const seen: string[] = [];
    const stream = await agent.stream(
      { messages: [{ role: 'user', content: 'go' }] },
      { streamMode: ['custom', 'updates'] },
    );
    for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
      if (mode === 'custom') {
        const event = chunk as { type: string; tool: string; text: string; toolCallId?: string };
        expect(event).toMatchObject({ type: 'sbx_tool_output', tool: 'bash', stream: 'stdout' });
        expect(event.toolCallId).toBe('call-1-0');
        seen.push(`custom:${event.text}`);
        if (event.text === 'first\n') await openGate('s1');
      } else if (
        JSON.stringify(chunk).includes('"ToolMessage"') ||
        JSON.stringify(chunk).includes('tool_call_id')
      ) {
        seen.push('tool-result');
      }
    }
    expect(seen.slice(0, 3)).toEqual(['custom:first\n', 'custom:second\n', 'tool-result']);
  });

  it('streamEvents gets on_custom_event sbx_tool_output before on_tool_end', async () => {
    const model = new ScriptedChatModel([[{ tool: 'bash', args: { command: GATED } }]]);
    const tools = await createSbxTools({ provider, threadId: 's2' });
    const agent = createAgent({ model, tools });
    const seen: string[] = [];
    const events = agent.streamEvents(
      { messages: [{ role: 'user', content: 'go' }] },
      { version: 'v2' },
    );
    for await (const event of events) {
      if (event.event === 'on_custom_event' && event.name === 'sbx_tool_output') {
        const data = event.data as { text: string };
        seen.push(`custom:${data.text}`);
        if (data.text === 'first\n') await openGate('s2');
      } else if (event.event === 'on_tool_end' && event.name === 'bash') {
        seen.push('tool-end');
      }
    }
    expect(seen).toEqual(['custom:first\n', 'custom:second\n', 'tool-end']);
  });
});

describe('the README examples', () => {
  it.each([
    ['<!-- example: runs in CI -->', [{ tool: 'bash', args: { command: 'echo hello' } }]],
    [
      '<!-- example (deepagents): runs in CI -->',
      [{ tool: 'execute', args: { command: 'echo hello' } }],
    ],
  ] as const)('%s runs as written (≤ 15 lines) with a scripted model', async (marker, step) => {
    const { SCRIPTED_MODEL, runReadmeExample } =
      await import('../../../tools/testing/readme-example.js');
    const model = new ScriptedChatModel([[...step]]);
    const lines = await runReadmeExample(join(import.meta.dirname, '..', 'README.md'), {
      replacements: ['', `const model = ${SCRIPTED_MODEL};`],
      marker,
      model,
    });
    expect(lines).toBeLessThanOrEqual(15);
    expect(JSON.stringify(model.prompts.at(-1))).toContain('hello\\n');
  });
});
