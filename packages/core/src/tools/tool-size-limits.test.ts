import { describe, expect, it } from 'vitest';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { createToolContext } from './create-tool-context.js';
import { runToolCall } from './run-tool.js';
import type { ToolConfigInput } from './tool-config.js';
import { MAX_TOOL_WRITE_BYTES, singleCallWriteLimit } from './tool-size-limits.js';

const P = '/mnt/user-data/workspace/data.txt';

function setup(config: ToolConfigInput = {}) {
  const provider = new MemorySandboxProvider();
  const ctx = createToolContext({
    provider,
    threadId: 't1',
    config: { readBeforeWrite: { enabled: false }, ...config },
  });
  const sandbox = async () => provider.sandboxes.get(await provider.acquire({ threadId: 't1' }))!;
  const writes = async () => (await sandbox()).calls.filter((c) => c.operation === 'writeFile');
  const reads = async () => (await sandbox()).calls.filter((c) => c.operation === 'readFile');
  return { ctx, sandbox, writes, reads };
}

/** `n` copies of `unit`, built at run time (no literal the guard could be fitted to). */
const many = (unit: string, n: number) => Array.from({ length: n }, () => unit).join('');

describe('str_replace: the result is sized before it is built', () => {
  it('replace_all of 80 KB of "a" by a 6 KB new_str (a 458 MiB result) is refused as TOO_LARGE, the file unchanged', async () => {
    const { ctx, sandbox, writes } = setup();
    const original = many('a', 80_000);
    (await sandbox()).setFile(P, original);
    const result = await runToolCall(
      'str_replace',
      { path: P, old_str: 'a', new_str: many('b', 6_000), replace_all: true },
      ctx,
    );
    expect(result.error?.code).toBe('TOO_LARGE');
    expect(result.text).toBe(
      `Error: str_replace would add ${80_000 * 5_999} bytes to ${P} (80000 replacements), over the 81920-byte single-call limit. The file is unchanged. Replace fewer occurrences per call, or use a shorter new_str.`,
    );
    expect((await sandbox()).fileText(P)).toBe(original);
    expect(await writes()).toEqual([]);
  });

  it('old_str and new_str over the single-call limit are refused before the file is read', async () => {
    const { ctx, sandbox, reads } = setup();
    (await sandbox()).setFile(P, 'x');
    const big = many('é', 41_000);
    const oldTooLarge = await runToolCall(
      'str_replace',
      { path: P, old_str: big, new_str: '' },
      ctx,
    );
    expect(oldTooLarge.error?.code).toBe('TOO_LARGE');
    expect(oldTooLarge.text).toBe(
      'Error: str_replace old_str (82000 bytes) exceeds the 81920-byte single-call limit. Quote a shorter part of the text that is still unique.',
    );
    const newTooLarge = await runToolCall(
      'str_replace',
      { path: P, old_str: 'x', new_str: big },
      ctx,
    );
    expect(newTooLarge.error?.code).toBe('TOO_LARGE');
    expect(newTooLarge.text).toMatch(/^Error: str_replace new_str \(82000 bytes\) exceeds/);
    expect(await reads()).toEqual([]);
  });

  it('growth up to the limit passes, one byte more is refused (the limit counts UTF-8 bytes)', async () => {
    const { ctx, sandbox } = setup({ writeFileMaxBytes: 100 });
    (await sandbox()).setFile(P, 'x-x-x-x-x');
    // Five occurrences, each growing by 20 bytes: ten two-byte characters and the x replace the x.
    const grow20 = `${many('é', 10)}x`;
    const atLimit = await runToolCall(
      'str_replace',
      { path: P, old_str: 'x', new_str: grow20, replace_all: true },
      ctx,
    );
    expect(atLimit).toEqual({ text: 'OK', isError: false });
    expect((await sandbox()).fileText(P)).toBe(Array(5).fill(grow20).join('-'));
    const overLimit = await runToolCall(
      'str_replace',
      { path: P, old_str: 'x', new_str: `${grow20}!`, replace_all: true },
      ctx,
    );
    expect(overLimit.error?.code).toBe('TOO_LARGE');
    expect(overLimit.text).toMatch(/would add 105 bytes .*\(5 replacements\), over the 100-byte/);
  });

  it('a disabled limit (0) still has the 16 MiB ceiling', async () => {
    const { ctx, sandbox, writes } = setup({ writeFileMaxBytes: 0 });
    expect(singleCallWriteLimit({ writeFileMaxBytes: 0 })).toBe(MAX_TOOL_WRITE_BYTES);
    expect(singleCallWriteLimit({ writeFileMaxBytes: 2 ** 40 })).toBe(MAX_TOOL_WRITE_BYTES);
    (await sandbox()).setFile(P, many('a', 1024 * 1024));
    const result = await runToolCall(
      'str_replace',
      { path: P, old_str: 'a', new_str: many('a', 18), replace_all: true },
      ctx,
    );
    expect(result.error?.code).toBe('TOO_LARGE');
    expect(result.text).toMatch(/would add 17825792 bytes .* over the 16777216-byte/);
    expect(await writes()).toEqual([]);
  });

  it('shrinking every occurrence of a large file goes through, whatever the count', async () => {
    const { ctx, sandbox } = setup();
    (await sandbox()).setFile(P, many('ab', 512 * 1024));
    const result = await runToolCall(
      'str_replace',
      { path: P, old_str: 'b', new_str: '', replace_all: true },
      ctx,
    );
    expect(result).toEqual({ text: 'OK', isError: false });
    expect((await sandbox()).fileText(P)).toBe(many('a', 512 * 1024));
  });

  it('edits multi-byte text exactly: characters, not bytes, are what match', async () => {
    const { ctx, sandbox } = setup();
    (await sandbox()).setFile(P, 'naïve café 😀 café\n');
    expect(
      (
        await runToolCall(
          'str_replace',
          { path: P, old_str: 'café', new_str: 'tea 🍵', replace_all: true },
          ctx,
        )
      ).text,
    ).toBe('OK');
    expect((await sandbox()).fileText(P)).toBe('naïve tea 🍵 😀 tea 🍵\n');
    expect(
      (await runToolCall('str_replace', { path: P, old_str: '😀', new_str: '$&$1' }, ctx)).text,
    ).toBe('OK');
    expect((await sandbox()).fileText(P)).toBe('naïve tea 🍵 $&$1 tea 🍵\n');
  });

  it('half a surrogate pair in old_str is an argument error, not a match inside a character', async () => {
    const { ctx, sandbox } = setup();
    (await sandbox()).setFile(P, '😀');
    const lone = String.fromCharCode(0xd83d);
    const result = await runToolCall('str_replace', { path: P, old_str: lone, new_str: 'x' }, ctx);
    expect(result.error?.code).toBe('INVALID_ARGUMENTS');
    expect(result.text).toMatch(/old_str: must be well-formed Unicode/);
    expect((await sandbox()).fileText(P)).toBe('😀');
  });
});

describe('write_file: the per-call limit, and its ceiling', () => {
  it('with the limit disabled (0), content over 16 MiB is still refused before the sandbox is touched', async () => {
    const { ctx, reads, writes } = setup({ writeFileMaxBytes: 0 });
    const content = many('x', MAX_TOOL_WRITE_BYTES + 1);
    const result = await runToolCall('write_file', { path: P, content }, ctx);
    expect(result.error?.code).toBe('TOO_LARGE');
    expect(result.text).toMatch(
      /^Error: write_file content \(16777217 bytes\) exceeds the 16777216-byte/,
    );
    expect([...(await reads()), ...(await writes())]).toEqual([]);
  });
});

describe('an unknown tool name is echoed bounded', () => {
  it('a 1 MB tool name comes back cut, not whole', async () => {
    const { ctx } = setup();
    const result = await runToolCall(many('n', 1_000_000), {}, ctx);
    expect(result.error?.code).toBe('UNKNOWN_TOOL');
    expect(result.text.length).toBeLessThan(1_000);
    expect(result.text).toMatch(/^Error: Unknown tool 'n{160}… \(1000000 characters\)'/);
  });
});
