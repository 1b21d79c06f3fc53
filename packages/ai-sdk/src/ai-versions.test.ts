import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@sbx/core';
import { LocalSandboxProvider } from '@sbx/local';
import * as ai7 from 'ai';
import * as ai7Test from 'ai/test';
import * as ai6 from 'ai6';
import * as ai6Test from 'ai6/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSbxTools } from './create-sbx-tools.js';

/**
 * The adapter's main paths against each `ai` major it supports: ai 7 (`ai`) and ai 6 (`ai6`, the
 * same package at ^6, which is what npm installs on Node 20). Untyped across the two: the tests
 * assert on what each version does at run time.
 */
type Loose = (options: Record<string, unknown>) => unknown;
interface AiVersion {
  readonly label: string;
  readonly version: string;
  readonly generateText: Loose;
  readonly streamText: Loose;
  readonly stepCountIs: (n: number) => unknown;
  readonly MockModel: new (options: Record<string, unknown>) => object;
  readonly convertArrayToReadableStream: (parts: unknown[]) => ReadableStream<unknown>;
  /** The call options that give every tool the thread `threadId` (how each version passes one). */
  readonly threadContext: (tools: object, threadId: string) => Record<string, unknown>;
}

const VERSIONS: readonly AiVersion[] = [
  {
    label: 'ai 7',
    version: '7',
    generateText: ai7.generateText as unknown as Loose,
    streamText: ai7.streamText as unknown as Loose,
    stepCountIs: ai7.stepCountIs,
    MockModel: ai7Test.MockLanguageModelV4 as unknown as AiVersion['MockModel'],
    convertArrayToReadableStream: ai7Test.convertArrayToReadableStream,
    threadContext: (tools, threadId) => ({
      toolsContext: Object.fromEntries(Object.keys(tools).map((name) => [name, { threadId }])),
    }),
  },
  {
    label: 'ai 6',
    version: '6',
    generateText: ai6.generateText as unknown as Loose,
    streamText: ai6.streamText as unknown as Loose,
    stepCountIs: ai6.stepCountIs,
    MockModel: ai6Test.MockLanguageModelV3 as unknown as AiVersion['MockModel'],
    convertArrayToReadableStream: ai6Test.convertArrayToReadableStream,
    threadContext: (_tools, threadId) => ({ experimental_context: { threadId } }),
  },
];

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

type ScriptedCall = { tool: string; input: Record<string, unknown> };

function scriptedModel(v: AiVersion, steps: ScriptedCall[][]) {
  let step = 0;
  const offered: { name: string; strict?: boolean }[][] = [];
  const model = new v.MockModel({
    doGenerate: async (options: { tools?: { name: string; strict?: boolean }[] }) => {
      offered.push(options.tools ?? []);
      const calls = steps[step];
      step += 1;
      if (calls) {
        return {
          content: calls.map((call, i) => ({
            type: 'tool-call',
            toolCallId: `call-${step}-${i}`,
            toolName: call.tool,
            input: JSON.stringify(call.input),
          })),
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      }
      return {
        content: [{ type: 'text', text: 'done' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
      };
    },
  });
  return { model, offered };
}

type Step = {
  toolResults: { toolName: string; output: unknown }[];
  content: { type: string; error?: unknown }[];
};
const outputsOf = (result: unknown) =>
  (result as { steps: Step[] }).steps.flatMap((s) => s.toolResults.map((r) => r.output));
const errorsOf = (result: unknown) =>
  (result as { steps: Step[] }).steps.flatMap((s) =>
    s.content.filter((c) => c.type === 'tool-error'),
  );

const FILE = '/mnt/user-data/workspace/hello.py';
const MINE = '/mnt/user-data/workspace/mine.txt';

describe.each(VERSIONS)('@sbx/ai-sdk with $label', (v) => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), `sbx-ai${v.version}-`));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('is the major it claims to be', async () => {
    const pkg = v.version === '7' ? 'ai/package.json' : 'ai6/package.json';
    const { default: json } = (await import(pkg, { with: { type: 'json' } })) as {
      default: { version: string };
    };
    expect(json.version.split('.')[0]).toBe(v.version);
  });

  it('runs a multi-step loop that writes, reads, edits and runs a file', async () => {
    const { model } = scriptedModel(v, [
      [{ tool: 'write_file', input: { path: FILE, content: 'print("hello")\n' } }],
      [{ tool: 'read_file', input: { path: FILE } }],
      [{ tool: 'str_replace', input: { path: FILE, old_str: 'hello', new_str: 'sbx' } }],
      [{ tool: 'bash', input: { command: 'cat hello.py; echo ran' } }],
    ]);
    const tools = createSbxTools({ provider, userId: 'alice', threadId: 't1' });
    const result = await v.generateText({
      model,
      tools,
      stopWhen: v.stepCountIs(10),
      prompt: 'go',
    });
    expect(outputsOf(result)).toEqual(['OK', 'print("hello")\n', 'OK', 'print("sbx")\nran\n']);
  });

  it('a bad argument is a tool-error carrying sbx’s message and code', async () => {
    const { model } = scriptedModel(v, [[{ tool: 'read_file', input: { path: 7 } }]]);
    const tools = createSbxTools({ provider, threadId: 't1' });
    const result = await v.generateText({ model, tools, stopWhen: v.stepCountIs(5), prompt: 'go' });
    const errors = errorsOf(result);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.error).toMatchObject({ code: 'INVALID_ARGUMENTS' });
  });

  it('strict: true reaches the model as each tool’s strict flag', async () => {
    const { model, offered } = scriptedModel(v, []);
    const tools = createSbxTools({ provider, threadId: 't1', strict: true });
    await v.generateText({ model, tools, prompt: 'go' });
    expect(offered[0]?.map((t) => t.strict)).toEqual(Array(7).fill(true));
  });

  it('one tool set serves two threads by run context, and falls back without one', async () => {
    const tools = createSbxTools({ provider, userId: 'alice', threadId: 'configured' });
    const conversation = (threadId: string | undefined) =>
      v.generateText({
        model: scriptedModel(v, [
          [{ tool: 'write_file', input: { path: MINE, content: `${threadId ?? 'none'}\n` } }],
          [{ tool: 'bash', input: { command: 'ls; cat mine.txt' } }],
        ]).model,
        tools,
        ...(threadId !== undefined ? v.threadContext(tools, threadId) : {}),
        stopWhen: v.stepCountIs(10),
        prompt: 'go',
      });
    const [a, b, none] = await Promise.all([
      conversation('thread-a'),
      conversation('thread-b'),
      conversation(undefined),
    ]);
    expect(outputsOf(a)).toEqual(['OK', 'mine.txt\nthread-a\n']);
    expect(outputsOf(b)).toEqual(['OK', 'mine.txt\nthread-b\n']);
    expect(outputsOf(none)).toEqual(['OK', 'mine.txt\nnone\n']);
    // Each thread's file is in its own sandbox: the run context's, or the configured one.
    for (const [threadId, text] of [
      ['thread-a', 'thread-a\n'],
      ['thread-b', 'thread-b\n'],
      ['configured', 'none\n'],
    ] as const) {
      const sandbox = provider.get(await provider.acquire({ threadId, userId: 'alice' }));
      expect(await sandbox?.readFile(MINE)).toBe(text);
    }
  });

  it('a hostile thread id in the run context is a tool-error and reaches no sandbox', async () => {
    let acquires = 0;
    const acquire = provider.acquire.bind(provider);
    provider.acquire = (options) => {
      acquires += 1;
      return acquire(options);
    };
    const tools = createSbxTools({ provider, threadId: 't1' });
    // Built at run time: a traversal.
    const hostile = ['..', '/', 'etc'].join('');
    const result = await v.generateText({
      model: scriptedModel(v, [[{ tool: 'ls', input: { path: '/mnt/user-data' } }]]).model,
      tools,
      ...v.threadContext(tools, hostile),
      stopWhen: v.stepCountIs(3),
      prompt: 'go',
    });
    expect(errorsOf(result)[0]?.error).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(acquires).toBe(0);
  });

  it('streamText shows bash’s first line as a preliminary result before the command ends', async () => {
    const tools = createSbxTools({ provider, threadId: 't1' });
    const command =
      'echo first; for i in $(seq 400); do [ -f go ] && break; sleep 0.05; done; echo second';
    let step = 0;
    const model = new v.MockModel({
      doStream: async () => {
        step += 1;
        const finish = (unified: string) => ({
          type: 'finish',
          finishReason: { unified, raw: unified },
          usage,
        });
        const parts =
          step === 1
            ? [
                { type: 'stream-start', warnings: [] },
                {
                  type: 'tool-call',
                  toolCallId: 'call-1',
                  toolName: 'bash',
                  input: JSON.stringify({ command }),
                },
                finish('tool-calls'),
              ]
            : [
                { type: 'stream-start', warnings: [] },
                { type: 'text-start', id: 't' },
                { type: 'text-delta', id: 't', delta: 'done' },
                { type: 'text-end', id: 't' },
                finish('stop'),
              ];
        return { stream: v.convertArrayToReadableStream(parts) };
      },
    });
    const result = v.streamText({ model, tools, stopWhen: v.stepCountIs(3), prompt: 'go' }) as {
      fullStream: AsyncIterable<{ type: string; preliminary?: boolean; output?: unknown }>;
    };
    const seen: { preliminary: boolean; output: unknown }[] = [];
    for await (const part of result.fullStream) {
      if (part.type !== 'tool-result') continue;
      seen.push({ preliminary: part.preliminary === true, output: part.output });
      if (part.preliminary && seen.length === 1) {
        const sandbox = provider.get(await provider.acquire({ threadId: 't1' }));
        await sandbox?.writeFile('/mnt/user-data/workspace/go', '');
      }
    }
    expect(seen[0]).toEqual({ preliminary: true, output: 'first\n' });
    expect(seen.at(-1)).toEqual({ preliminary: false, output: 'first\nsecond\n' });
  });

  it('the abort signal stops the running command itself', async () => {
    const controller = new AbortController();
    const { model } = scriptedModel(v, [[{ tool: 'bash', input: { command: 'sleep 30' } }]]);
    const tools = createSbxTools({ provider, threadId: 't1' });
    const ended: unknown[] = [];
    const run = v.generateText({
      model,
      tools,
      stopWhen: v.stepCountIs(5),
      prompt: 'go',
      abortSignal: controller.signal,
      // Both majors call these (ai 7 as deprecated aliases of onToolExecutionStart/End).
      experimental_onToolCallStart: () => {
        setImmediate(() => controller.abort());
      },
      experimental_onToolCallFinish: (event: unknown) => {
        ended.push(event);
      },
    }) as Promise<unknown>;
    await expect(run).rejects.toThrow();
    // The sandbox call itself ended on the signal: a killed sleep, not only the SDK's loop.
    expect(ended).toHaveLength(1);
    const event = ended[0] as { error?: unknown; toolOutput?: { error?: unknown } };
    expect(event.error ?? event.toolOutput?.error).toMatchObject({ code: 'ABORTED' });
  });
});
