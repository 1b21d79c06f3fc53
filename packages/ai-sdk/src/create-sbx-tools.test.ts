import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ALL_TOOL_NAMES,
  InvalidArgumentError,
  SandboxAuthorizationError,
  silentLogger,
} from '@sbx/core';
import { LocalSandboxProvider } from '@sbx/local';
import { generateText, stepCountIs, streamText, type ModelMessage } from 'ai';
import { MockLanguageModelV4, convertArrayToReadableStream } from 'ai/test';
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import { createSbxTools } from './create-sbx-tools.js';
import { sbxToolsContext } from './sbx-run-context.js';
import { MAX_RUN_THREADS, ThreadRunners } from '@sbx/core';

type ScriptedCall = { tool: string; input: Record<string, unknown> };
type LanguageModelResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

function toolStep(calls: ScriptedCall[], step: number): LanguageModelResult {
  return {
    content: calls.map((call, i) => ({
      type: 'tool-call' as const,
      toolCallId: `call-${step}-${i}`,
      toolName: call.tool,
      input: JSON.stringify(call.input),
    })),
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

/** A step's calls, fixed or read from the prompt (as a model reads a process id it was given). */
type ScriptedStep = ScriptedCall[] | ((prompt: ModelMessage[]) => ScriptedCall[]);

/** A model that issues the scripted tool calls step by step, then answers "done". */
function scriptedModel(steps: ScriptedStep[]) {
  const prompts: ModelMessage[][] = [];
  let step = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      prompts.push(options.prompt as ModelMessage[]);
      const scripted = steps[step];
      step += 1;
      const calls =
        typeof scripted === 'function' ? scripted(options.prompt as ModelMessage[]) : scripted;
      if (calls) return toolStep(calls, step);
      return {
        content: [{ type: 'text', text: 'done' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
      };
    },
  });
  return { model, prompts };
}

const FILE = '/mnt/user-data/workspace/hello.py';

/** A tool's result when called directly: the last value of an async iterable (bash streams). */
async function settle<T>(result: AsyncIterable<T> | PromiseLike<T> | T): Promise<T> {
  if (typeof result === 'object' && result !== null && Symbol.asyncIterator in result) {
    let last: T | undefined;
    for await (const value of result) last = value;
    return last as T;
  }
  return await result;
}

describe('@sbx/ai-sdk with the real AI SDK and a scripted model', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-ai-sdk-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('runs a multi-step loop that writes, reads, edits and runs a file', async () => {
    const { model } = scriptedModel([
      [{ tool: 'write_file', input: { path: FILE, content: 'print("hello")\n' } }],
      [{ tool: 'read_file', input: { path: FILE } }],
      [{ tool: 'str_replace', input: { path: FILE, old_str: 'hello', new_str: 'sbx' } }],
      [{ tool: 'bash', input: { command: 'cat hello.py; echo ran' } }],
    ]);
    const tools = createSbxTools({ provider, userId: 'alice', threadId: 't1' });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(10), prompt: 'go' });
    const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => [r.toolName, r.output]));
    expect(outputs).toEqual([
      ['write_file', 'OK'],
      ['read_file', 'print("hello")\n'],
      ['str_replace', 'OK'],
      ['bash', 'print("sbx")\nran\n'],
    ]);
    expect(result.text).toBe('done');
  });

  it('a bad argument is a tool-error carrying sbx’s message, and the loop goes on', async () => {
    const { model, prompts } = scriptedModel([[{ tool: 'read_file', input: { path: 7 } }]]);
    const tools = createSbxTools({ provider, threadId: 't1' });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'go' });
    const errors = result.steps.flatMap((s) => s.content.filter((c) => c.type === 'tool-error'));
    expect(errors).toHaveLength(1);
    const error = (errors[0] as { error: { message: string; code: string } }).error;
    expect(error.message).toBe(
      'Error: Invalid arguments for read_file: path: expected string, received number',
    );
    expect(error.code).toBe('INVALID_ARGUMENTS');
    // The model's next prompt holds sbx's text as the tool's error output.
    expect(JSON.stringify(prompts[1])).toContain('Invalid arguments for read_file: path:');
  });

  it('a file whose text starts with "Error:" is a normal result, not a tool-error', async () => {
    const { model } = scriptedModel([
      [{ tool: 'write_file', input: { path: FILE, content: 'Error: just data\n' } }],
      [{ tool: 'read_file', input: { path: FILE } }],
    ]);
    const tools = createSbxTools({ provider, threadId: 't1' });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'go' });
    expect(result.steps.flatMap((s) => s.toolResults.map((r) => r.output))).toEqual([
      'OK',
      'Error: just data\n',
    ]);
  });

  it('an authorization deny reaches the model as a tool-error and touches no sandbox', async () => {
    const { model } = scriptedModel([[{ tool: 'ls', input: { path: '/mnt/user-data' } }]]);
    let acquires = 0;
    const acquire = provider.acquire.bind(provider);
    provider.acquire = (options) => {
      acquires += 1;
      return acquire(options);
    };
    const tools = createSbxTools({
      provider,
      threadId: 't1',
      authorize: async () => {
        throw new SandboxAuthorizationError(undefined, 'guest');
      },
    });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'go' });
    const errors = result.steps.flatMap((s) => s.content.filter((c) => c.type === 'tool-error'));
    expect((errors[0] as { error: { code: string } }).error.code).toBe('SANDBOX_AUTHORIZATION');
    expect(acquires).toBe(0);
  });

  it('the SDK’s abort signal stops a running command', async () => {
    const controller = new AbortController();
    const { model } = scriptedModel([[{ tool: 'bash', input: { command: 'sleep 30' } }]]);
    const tools = createSbxTools({ provider, threadId: 't1' });
    const ended: unknown[] = [];
    const run = generateText({
      model,
      tools,
      stopWhen: stepCountIs(5),
      prompt: 'go',
      abortSignal: controller.signal,
      onToolExecutionStart: () => {
        setImmediate(() => controller.abort());
      },
      onToolExecutionEnd: (event) => {
        ended.push(event);
      },
    });
    await expect(run).rejects.toThrow();
    // The sandbox call itself ended on the signal (a 30 s sleep killed), not only the SDK's loop.
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({
      toolOutput: { type: 'tool-error', error: { name: 'SbxToolError', code: 'ABORTED' } },
    });
  });
});

describe('@sbx/ai-sdk strict mode and argument types', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-ai-sdk-strict-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('strict: true reaches the model as each tool’s strict flag with the strict schemas', async () => {
    let offered: { name: string; strict?: boolean; inputSchema?: unknown }[] = [];
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        offered = (options.tools ?? []) as typeof offered;
        return {
          content: [{ type: 'text', text: 'done' }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      },
    });
    const tools = createSbxTools({ provider, threadId: 't1', strict: true });
    expect(Object.values(tools).map((t) => t.strict)).toEqual(Array(7).fill(true));
    await generateText({ model, tools, prompt: 'go' });
    const readFile = offered.find((t) => t.name === 'read_file');
    expect(readFile?.strict).toBe(true);
    expect((readFile?.inputSchema as { required?: string[] }).required).toEqual([
      'description',
      'path',
      'start_line',
      'end_line',
    ]);
  });

  it('strict: false is passed on as false, and no strict option leaves the flag unset', () => {
    const plain = createSbxTools({ provider, threadId: 't1', strict: false });
    expect(plain.bash?.strict).toBe(false);
    const unset = createSbxTools({ provider, threadId: 't1' });
    expect(unset.bash).not.toHaveProperty('strict');
  });

  it('a tool call’s input is typed by the tool’s name', async () => {
    const { model } = scriptedModel([[{ tool: 'read_file', input: { path: FILE } }]]);
    const tools = createSbxTools({ provider, threadId: 't1' });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'go' });
    const call = result.steps[0]!.toolCalls[0]!;
    if (call.toolName === 'read_file' && !call.dynamic) {
      expectTypeOf(call.input.path).toEqualTypeOf<string>();
      expectTypeOf(call.input.start_line).toEqualTypeOf<number | null | undefined>();
      expect(call.input.path).toBe(FILE);
    } else {
      expect.unreachable(`expected a read_file call, got ${call.toolName}`);
    }
  });
});

describe('@sbx/ai-sdk threads from the call context', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-ai-sdk-threads-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  const MINE = '/mnt/user-data/workspace/mine.txt';

  it('one tool set serves two threads at once, each seeing only its own workspace', async () => {
    // No flag: a thread in the run context is used whenever one is there.
    const tools = createSbxTools({ provider, userId: 'alice', threadId: 'default-thread' });
    const conversation = (threadId: string) => {
      const { model } = scriptedModel([
        [{ tool: 'write_file', input: { path: MINE, content: `${threadId}\n` } }],
        [{ tool: 'bash', input: { command: 'ls; cat mine.txt' } }],
        [{ tool: 'read_file', input: { path: MINE } }],
      ]);
      return generateText({
        model,
        tools,
        toolsContext: sbxToolsContext(tools, { threadId }),
        stopWhen: stepCountIs(10),
        prompt: 'go',
      });
    };
    const [a, b] = await Promise.all([conversation('thread-a'), conversation('thread-b')]);
    const outputs = (r: typeof a) => r.steps.flatMap((s) => s.toolResults.map((t) => t.output));
    expect(outputs(a)).toEqual(['OK', 'mine.txt\nthread-a\n', 'thread-a\n']);
    expect(outputs(b)).toEqual(['OK', 'mine.txt\nthread-b\n', 'thread-b\n']);
    // The construction-time thread was never used, and the two threads have sandboxes of their own.
    const one = await provider.acquire({ threadId: 'thread-a', userId: 'alice' });
    const other = await provider.acquire({ threadId: 'thread-b', userId: 'alice' });
    expect(one).not.toBe(other);
  });

  it('a thread’s read marks are its own: a write after another thread’s read is refused', async () => {
    const tools = createSbxTools({ provider, threadId: 'shared' });
    const bash = tools.bash!;
    const write = tools.write_file!;
    const read = tools.read_file!;
    const call = { toolCallId: 'c', messages: [] };
    const ctx = (threadId: string) => ({ ...call, context: { threadId } });
    await settle(bash.execute!({ command: 'printf one > same.txt' }, ctx('t-x')));
    await settle(bash.execute!({ command: 'printf two > same.txt' }, ctx('t-y')));
    await settle(read.execute!({ path: '/mnt/user-data/workspace/same.txt' }, ctx('t-x')));
    // t-y never read its file: its write is refused although t-x read a file of that name.
    await expect(
      settle(
        write.execute!({ path: '/mnt/user-data/workspace/same.txt', content: 'x' }, ctx('t-y')),
      ),
    ).rejects.toMatchObject({ code: 'READ_BEFORE_WRITE' });
  });

  it('a thread id outside the id rule is a tool-error and reaches no sandbox', async () => {
    let acquires = 0;
    const acquire = provider.acquire.bind(provider);
    provider.acquire = (options) => {
      acquires += 1;
      return acquire(options);
    };
    const tools = createSbxTools({ provider, threadId: 't1' });
    const hostile = ['..', 'a'.repeat(300), 'x/../y'];
    for (const threadId of hostile) {
      const result = await generateText({
        model: scriptedModel([[{ tool: 'ls', input: { path: '/mnt/user-data' } }]]).model,
        tools,
        toolsContext: sbxToolsContext(tools, { threadId }),
        stopWhen: stepCountIs(3),
        prompt: 'go',
      });
      const errors = result.steps.flatMap((s) => s.content.filter((c) => c.type === 'tool-error'));
      expect(errors).toHaveLength(1);
      expect((errors[0] as { error: { code?: string } }).error.code).toBe('INVALID_ARGUMENT');
    }
    expect(acquires).toBe(0);
  });

  it('a context of the wrong shape is refused by the tools’ context schema', async () => {
    const tools = createSbxTools({ provider, threadId: 't1' });
    const { model } = scriptedModel([[{ tool: 'ls', input: { path: '/mnt/user-data' } }]]);
    const run = generateText({
      model,
      tools,
      toolsContext: { ls: { threadId: 7 } } as never,
      stopWhen: stepCountIs(3),
      prompt: 'go',
    });
    const result = await run.catch((err: unknown) => err);
    const text = result instanceof Error ? result.message : JSON.stringify(result);
    expect(text).toMatch(/threadId must be a string/);
  });

  it('a call without a context runs in the configured thread, and needs no toolsContext', async () => {
    const tools = createSbxTools({ provider, threadId: 'configured' });
    const { model } = scriptedModel([
      [{ tool: 'bash', input: { command: 'printf fallback > where.txt' } }],
    ]);
    // Type-checks without `toolsContext`: the tools' context is optional.
    const result = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'go' });
    expect(result.steps[0]?.toolResults.map((r) => r.output)).toEqual(['(no output)']);
    const configured = provider.get(await provider.acquire({ threadId: 'configured' }));
    expect(await configured?.readFile('/mnt/user-data/workspace/where.txt')).toBe('fallback');
  });

  it('a context naming only the user keeps the configured thread for that user', async () => {
    const tools = createSbxTools({ provider, threadId: 'configured', userId: 'alice' });
    const ctx = { toolCallId: 'c', messages: [], context: { userId: 'bob' } };
    await settle(tools.bash.execute!({ command: 'printf bob > who.txt' }, ctx));
    const bobs = provider.get(await provider.acquire({ threadId: 'configured', userId: 'bob' }));
    expect(await bobs?.readFile('/mnt/user-data/workspace/who.txt')).toBe('bob');
  });

  it('threadFromContext: false ignores the context; true (deprecated) types it as required', async () => {
    const tools = createSbxTools({ provider, threadId: 'bound', threadFromContext: false });
    expect(tools.bash).not.toHaveProperty('contextSchema');
    const ctx = { toolCallId: 'c', messages: [], context: { threadId: 'elsewhere' } };
    await settle(tools.bash.execute!({ command: 'printf here > where.txt' }, ctx as never));
    const bound = provider.get(await provider.acquire({ threadId: 'bound' }));
    expect(await bound?.readFile(`/mnt/user-data/workspace/where.txt`)).toBe('here');
    const typed = createSbxTools({ provider, threadId: 'bound', threadFromContext: true });
    const { model } = scriptedModel([]);
    // @ts-expect-error: with threadFromContext: true, ai 7 asks for the tools' context on every call
    await generateText({ model, tools: typed, prompt: 'go' });
  });

  it('keeps at most MAX_RUN_THREADS thread contexts, the least recently used going first', () => {
    expect(MAX_RUN_THREADS).toBe(1000);
    const max = 4;
    const runners = new ThreadRunners({ provider, threadId: 'base' }, max);
    const first = runners.for({ threadId: 'thread-0' });
    const kept = runners.for({ threadId: 'thread-1' });
    for (let i = 2; i <= max; i += 1) {
      runners.for({ threadId: `thread-${i}` });
      if (i === max - 1) expect(runners.for({ threadId: 'thread-1' })).toBe(kept);
    }
    expect(runners.for({ threadId: 'thread-1' })).toBe(kept);
    expect(runners.for({ threadId: 'thread-0' })).not.toBe(first);
    expect(runners.for({ threadId: 'base' })).toBe(runners.base);
  });

  it('checks a context’s ids by the id rule before they key a thread context', () => {
    const runners = new ThreadRunners({ provider, threadId: 'base' });
    // Built at run time: a 4 MiB id and a traversal.
    const huge = 'x'.repeat(4 * 1024 * 1024);
    const traversal = ['.', '.', '/', 'e', 't', 'c'].join('');
    expect(() => runners.for({ threadId: huge })).toThrow(InvalidArgumentError);
    expect(() => runners.for({ threadId: traversal })).toThrow(InvalidArgumentError);
    expect(() => runners.for({ threadId: 'ok', userId: huge })).toThrow(InvalidArgumentError);
  });

  it('refuses another thread when the context is tied to its own by a lease owner', () => {
    const runners = new ThreadRunners({ provider, threadId: 'base', leaseOwnerId: 'run-1' });
    expect(() => runners.for({ threadId: 'other' })).toThrow(/leaseOwnerId/);
    expect(runners.for({ threadId: 'base' })).toBe(runners.base);
  });
});

describe('@sbx/ai-sdk streams bash output as preliminary tool results', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-ai-sdk-stream-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  type StreamPart =
    Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'] extends ReadableStream<infer P>
      ? P
      : never;

  /** A streaming model: one bash call, then "done". */
  function streamingModel(command: string) {
    let step = 0;
    return new MockLanguageModelV4({
      doStream: async () => {
        step += 1;
        const parts: StreamPart[] =
          step === 1
            ? [
                { type: 'stream-start' as const, warnings: [] },
                {
                  type: 'tool-call' as const,
                  toolCallId: 'call-1',
                  toolName: 'bash',
                  input: JSON.stringify({ command }),
                },
                {
                  type: 'finish' as const,
                  finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
                  usage,
                },
              ]
            : [
                { type: 'stream-start' as const, warnings: [] },
                { type: 'text-start' as const, id: 't' },
                { type: 'text-delta' as const, id: 't', delta: 'done' },
                { type: 'text-end' as const, id: 't' },
                {
                  type: 'finish' as const,
                  finishReason: { unified: 'stop' as const, raw: 'stop' },
                  usage,
                },
              ];
        return { stream: convertArrayToReadableStream(parts) };
      },
    });
  }

  it('streamText shows the first line before the command ends, then the final result', async () => {
    const tools = createSbxTools({ provider, threadId: 't1' });
    // The command waits (bounded) for a file the test writes only once it saw the first line.
    const command =
      'echo first; for i in $(seq 400); do [ -f go ] && break; sleep 0.05; done; echo second';
    const result = streamText({
      model: streamingModel(command),
      tools,
      stopWhen: stepCountIs(3),
      prompt: 'go',
    });
    const seen: { preliminary: boolean; output: unknown }[] = [];
    for await (const part of result.fullStream) {
      if (part.type !== 'tool-result') continue;
      seen.push({ preliminary: part.preliminary === true, output: part.output });
      if (part.preliminary && String(part.output).includes('first') && seen.length === 1) {
        const sandbox = await sandboxOf('t1');
        await sandbox.writeFile('/mnt/user-data/workspace/go', '');
      }
    }
    expect(seen[0]).toEqual({ preliminary: true, output: 'first\n' });
    expect(seen.at(-1)).toEqual({ preliminary: false, output: 'first\nsecond\n' });
    expect(await result.text).toBe('done');
  });

  async function sandboxOf(threadId: string) {
    const sandbox = provider.get(await provider.acquire({ threadId }));
    if (!sandbox) throw new Error('no sandbox');
    return sandbox;
  }

  it('a flood of lines gives few preliminary results, each bounded by the stream limit', async () => {
    const tools = createSbxTools({
      provider,
      threadId: 't2',
      config: { bashOutputMaxChars: 4000 },
    });
    const ctx = { toolCallId: 'c', messages: [] };
    const outputs: string[] = [];
    const iterable = tools.bash.execute!({ command: 'seq 1 20000' }, ctx as never);
    for await (const output of iterable as AsyncIterable<string>) outputs.push(output);
    const preliminary = outputs.slice(0, -1);
    expect(preliminary.length).toBeGreaterThan(0);
    // The stream stops at the limit (plus its notice); the final result is bash's own text.
    expect(Math.max(...preliminary.map((o) => o.length))).toBeLessThanOrEqual(4000 + 200);
    expect(outputs.at(-1)).toMatch(/^1\n2\n[\s\S]*\n20000\n$/);
  });

  it('lines arriving one by one are not each re-sent whole: all preliminary results stay linear', async () => {
    const tools = createSbxTools({ provider, threadId: 't4' });
    const ctx = { toolCallId: 'c', messages: [] };
    const outputs: string[] = [];
    const command = 'for i in $(seq 300); do echo line-$i; sleep 0.005; done';
    const iterable = tools.bash.execute!({ command }, ctx as never);
    for await (const output of iterable as AsyncIterable<string>) outputs.push(output);
    const final = outputs.at(-1)!;
    expect(final.split('\n')).toHaveLength(301);
    const streamedTotal = outputs.slice(0, -1).reduce((n, o) => n + o.length, 0);
    expect(streamedTotal).toBeLessThanOrEqual(17 * final.length);
  });

  it('a failing command’s preliminary results come before its tool-error', async () => {
    const tools = createSbxTools({ provider, threadId: 't3' });
    const ctx = { toolCallId: 'c', messages: [] };
    const outputs: string[] = [];
    const iterable = tools.bash.execute!({ command: 'echo partial; exit 5' }, ctx as never);
    await expect(
      (async () => {
        for await (const output of iterable as AsyncIterable<string>) outputs.push(output);
      })(),
    ).rejects.toMatchObject({ name: 'SbxToolError', message: 'partial\n\nExit Code: 5' });
    expect(outputs).toEqual(['partial\n']);
  });
});

describe('@sbx/ai-sdk with the process tools on', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-ai-sdk-proc-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  /** The process id the last tool result handed the model. */
  const processIdIn = (prompt: ModelMessage[]): string =>
    /process_id=\\"(p\d+)\\"/.exec(JSON.stringify(prompt))?.[1] ?? 'none';

  it('offers the four process tools, and a yielded server is fed, read and killed', async () => {
    const { model } = scriptedModel([
      [
        {
          tool: 'bash',
          input: {
            command: 'echo ready; while read l; do echo "got:$l"; done',
            yield_time_ms: 300,
          },
        },
      ],
      (prompt) => [
        {
          tool: 'process_write',
          input: { process_id: processIdIn(prompt), input: 'ping\n', wait_ms: 5_000 },
        },
      ],
      (prompt) => [
        { tool: 'process_list', input: {} },
        { tool: 'process_kill', input: { process_id: processIdIn(prompt) } },
      ],
    ]);
    const tools = createSbxTools({ provider, threadId: 't1', config: { processTools: true } });
    expect(Object.keys(tools)).toEqual([...ALL_TOOL_NAMES]);
    const result = await generateText({ model, tools, stopWhen: stepCountIs(10), prompt: 'go' });
    const outputs = result.steps.flatMap((s) =>
      s.toolResults.map((r) => [r.toolName, String(r.output)]),
    );
    expect(outputs.map(([name]) => name)).toEqual([
      'bash',
      'process_write',
      'process_list',
      'process_kill',
    ]);
    expect(outputs[0]![1]).toMatch(/ready[\s\S]*process_id="p\d+"/);
    expect(outputs[1]![1]).toContain('got:ping');
    expect(outputs[2]![1]).toMatch(/^p\d+\trunning\t/m);
    expect(outputs[3]![1]).toMatch(/was ended by SIGTERM\]$/);
  });

  it('without the setting a process tool is unknown, and the model is told so', async () => {
    const { model } = scriptedModel([[{ tool: 'process_list', input: {} }]]);
    const tools = createSbxTools({ provider, threadId: 't1' });
    expect(Object.keys(tools)).toHaveLength(7);
    const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'go' });
    const errors = result.steps.flatMap((s) => s.content.filter((c) => c.type === 'tool-error'));
    expect(errors).toHaveLength(1);
  });
});

describe('the README example', () => {
  it('runs as written (≤ 15 lines) with a scripted model in place of the real one', async () => {
    const { SCRIPTED_MODEL, runReadmeExample } =
      await import('../../../tools/testing/readme-example.js');
    const { model, prompts } = scriptedModel([
      [{ tool: 'write_file', input: { path: FILE, content: 'print("hello")\n' } }],
      [{ tool: 'bash', input: { command: 'python3 hello.py' } }],
    ]);
    const lines = await runReadmeExample(join(import.meta.dirname, '..', 'README.md'), {
      replacements: ['', `  model: ${SCRIPTED_MODEL},`],
      model,
    });
    expect(lines).toBeLessThanOrEqual(15);
    expect(JSON.stringify(prompts.at(-1))).toContain('hello\\n');
  });
});
