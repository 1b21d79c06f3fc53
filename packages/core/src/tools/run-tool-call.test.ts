import { describe, expect, it } from 'vitest';
import { SandboxAuthorizationError } from '../errors/errors.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { createToolContext } from './create-tool-context.js';
import { runTool, runToolCall } from './run-tool.js';
import { ToolErrorCode } from './tool-result.js';

const W = '/mnt/user-data/workspace';
const LOG = `${W}/build.log`;

function contextWith(files: Record<string, string> = {}, onCommand?: () => string) {
  const provider = new MemorySandboxProvider({
    sandboxOptions: { files, ...(onCommand ? { onCommand } : {}) },
  });
  return createToolContext({ provider, threadId: 't1' });
}

describe('runToolCall: the outcome is the tool’s decision, not the text’s first word', () => {
  it('a file whose first line is "Error: ..." reads as a success', async () => {
    const ctx = contextWith({ [LOG]: 'Error: disk full\n' });
    expect(await runToolCall('read_file', { path: LOG }, ctx)).toEqual({
      text: 'Error: disk full\n',
      isError: false,
    });
  });

  it('a command printing "Error: ..." is a success when the tool ran it', async () => {
    const ctx = contextWith({}, () => 'Error: this is just output');
    const result = await runToolCall('bash', { command: 'echo "Error: this is just output"' }, ctx);
    expect(result).toMatchObject({ text: 'Error: this is just output', isError: false });
    expect(result.command?.exitCode).toBe(0);
  });

  it('a refusal that does not start with "Error:" is still a failure', async () => {
    const ctx = contextWith({ [LOG]: 'x\n' });
    const result = await runToolCall('read_file', { path: LOG, start_line: 0 }, ctx);
    expect(result).toEqual({
      text: '(start_line must be >= 1)',
      isError: true,
      error: { code: ToolErrorCode.INVALID_ARGUMENTS, message: '(start_line must be >= 1)' },
    });
  });

  it.each([
    ['rm_rf', {}, ToolErrorCode.UNKNOWN_TOOL],
    ['ls', { path: 7 }, ToolErrorCode.INVALID_ARGUMENTS],
    ['read_file', { path: `${W}/missing.txt` }, ToolErrorCode.NOT_FOUND],
    ['ls', { path: LOG }, undefined],
    ['str_replace', { path: LOG, old_str: 'nope', new_str: 'x' }, ToolErrorCode.READ_BEFORE_WRITE],
    ['write_file', { path: LOG, content: 'y' }, ToolErrorCode.READ_BEFORE_WRITE],
    ['grep', { pattern: '(', path: W }, ToolErrorCode.INVALID_PATTERN],
  ] as const)('%s %j → %s', async (name, input, code) => {
    const ctx = contextWith({ [LOG]: 'x\n' });
    const result = await runToolCall(name, input, ctx);
    expect(result.text).toBe(await runTool(name, input, contextWith({ [LOG]: 'x\n' })));
    if (code === undefined) {
      expect(result.isError).toBe(false);
      expect(result.error).toBeUndefined();
    } else {
      expect(result.isError).toBe(true);
      expect(result.error?.code).toBe(code);
      expect(result.error?.message).toBe(result.text.replace(/^Error: /, ''));
    }
  });

  it('str_replace distinguishes a missing match from an ambiguous one', async () => {
    const ctx = contextWith({ [LOG]: 'a a\n' });
    await runToolCall('read_file', { path: LOG }, ctx);
    expect(
      (await runToolCall('str_replace', { path: LOG, old_str: 'b', new_str: 'c' }, ctx)).error,
    ).toMatchObject({ code: ToolErrorCode.NO_MATCH });
    expect(
      (await runToolCall('str_replace', { path: LOG, old_str: 'a', new_str: 'c' }, ctx)).error,
    ).toMatchObject({ code: ToolErrorCode.AMBIGUOUS_MATCH });
    expect(
      await runToolCall('str_replace', { path: LOG, old_str: 'a a', new_str: 'c' }, ctx),
    ).toEqual({ text: 'OK', isError: false });
  });

  it('an authorization denial carries the sbx error code', async () => {
    const provider = new MemorySandboxProvider();
    const ctx = createToolContext({
      provider,
      threadId: 't1',
      authorize: async () => {
        throw new SandboxAuthorizationError(undefined, 'guest');
      },
    });
    const result = await runToolCall('ls', { path: W }, ctx);
    expect(result.isError).toBe(true);
    expect(result.error?.code).toBe(SandboxAuthorizationError.CODE);
  });

  it('each call has its own outcome: a failure does not leak into the next call', async () => {
    const ctx = contextWith({ [LOG]: 'x\n' });
    const [bad, good] = await Promise.all([
      runToolCall('read_file', { path: `${W}/missing.txt` }, ctx),
      runToolCall('read_file', { path: LOG }, ctx),
    ]);
    expect(bad.isError).toBe(true);
    expect(good).toEqual({ text: 'x\n', isError: false });
  });
});

describe('runToolCall options', () => {
  it('a per-call signal on a context without a session keeps the read marks across calls', async () => {
    const ctx = { ...contextWith({ [LOG]: 'v1\n' }), session: undefined };
    const signal = new AbortController().signal;
    await runToolCall('read_file', { path: LOG }, ctx, { signal });
    const edited = await runToolCall(
      'str_replace',
      { path: LOG, old_str: 'v1', new_str: 'v2' },
      ctx,
      {
        signal,
      },
    );
    expect(edited).toEqual({ text: 'OK', isError: false });
  });

  it('a per-call signal cancels the call, combined with the context signal', async () => {
    const seen: (boolean | undefined)[] = [];
    const provider = new MemorySandboxProvider({
      sandboxOptions: {
        onCommand: (_command, options) => {
          seen.push(options.signal?.aborted);
          return 'ran';
        },
      },
    });
    const ctx = createToolContext({ provider, threadId: 't1' });
    const aborted = new AbortController();
    aborted.abort();
    await runToolCall('bash', { command: 'true' }, ctx, { signal: aborted.signal });
    await runToolCall('bash', { command: 'true' }, ctx);
    expect(seen).toEqual([true, undefined]);
  });
});
