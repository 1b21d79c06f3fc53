import { describe, expect, it } from 'vitest';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { createToolContext } from './create-tool-context.js';
import { createToolRunner } from './tool-runner.js';
import { ToolErrorCode } from './tool-result.js';

const P = '/mnt/user-data/workspace/a.txt';

describe('createToolRunner', () => {
  it('shares one sandbox id and one read-before-write session across calls', async () => {
    const provider = new MemorySandboxProvider({ sandboxOptions: { files: { [P]: 'v1\n' } } });
    const runner = createToolRunner({ provider, threadId: 't1' });
    expect(
      (await runner.call('str_replace', { path: P, old_str: 'v1', new_str: 'v2' })).error?.code,
    ).toBe(ToolErrorCode.READ_BEFORE_WRITE);
    await runner.call('read_file', { path: P });
    expect(await runner.call('str_replace', { path: P, old_str: 'v1', new_str: 'v2' })).toEqual({
      text: 'OK',
      isError: false,
    });
    expect(runner.context.state.sandboxId).toBeDefined();
  });

  it('gives a host context without a session one session for all calls', async () => {
    const provider = new MemorySandboxProvider({ sandboxOptions: { files: { [P]: 'v1\n' } } });
    const context = { ...createToolContext({ provider, threadId: 't1' }), session: undefined };
    const runner = createToolRunner({ context });
    await runner.call('read_file', { path: P });
    expect((await runner.call('write_file', { path: P, content: 'x' })).isError).toBe(false);
  });

  it('offers only the chosen tools and refuses the others as UNKNOWN_TOOL', async () => {
    const runner = createToolRunner({
      provider: new MemorySandboxProvider(),
      threadId: 't1',
      tools: ['ls', 'read_file'],
    });
    expect(runner.definitions.map((d) => d.name)).toEqual(['ls', 'read_file']);
    const refused = await runner.call('bash', { command: 'echo hi' });
    expect(refused).toMatchObject({ isError: true, error: { code: ToolErrorCode.UNKNOWN_TOOL } });
    expect(refused.text).toBe(
      "Error: Tool 'bash' is not available here. Available tools: ls, read_file",
    );
  });

  it('passes a per-call signal to that call only, combined with the context signal', async () => {
    const seen: (boolean | undefined)[] = [];
    const provider = new MemorySandboxProvider({
      sandboxOptions: {
        onCommand: (_command, options) => {
          seen.push(options.signal?.aborted);
          return 'ran';
        },
      },
    });
    const runner = createToolRunner({
      provider,
      threadId: 't1',
      config: { allowHostBash: true },
    });
    const perCall = new AbortController();
    const first = runner.call('bash', { command: 'echo 1' }, { signal: perCall.signal });
    perCall.abort();
    await first;
    await runner.call('bash', { command: 'echo 2' });
    expect(seen).toEqual([true, undefined]);
  });
});

describe('describingToolSchema', () => {
  it('hands out the plain schema per target and accepts every value', async () => {
    const { getToolDefinitions } = await import('./tool-definitions.js');
    const { describingToolSchema } = await import('./tool-standard-schema.js');
    const [ls] = getToolDefinitions({ tools: ['ls'] });
    const standard = describingToolSchema(ls!)['~standard'];
    expect(standard.validate({ path: 7 })).toEqual({ value: { path: 7 } });
    expect(standard.jsonSchema.input({ target: 'draft-2020-12' })).toEqual(ls!.inputSchema);
    const draft7 = standard.jsonSchema.input({ target: 'draft-07' });
    expect(draft7.$schema).toBeUndefined();
    expect(draft7.properties).toEqual(ls!.inputSchema.properties);
    // A consumer mutating its copy does not change the next one.
    (draft7.properties as Record<string, unknown>).path = 'changed';
    expect(standard.jsonSchema.input({ target: 'draft-07' }).properties).toEqual(
      ls!.inputSchema.properties,
    );
  });
});
