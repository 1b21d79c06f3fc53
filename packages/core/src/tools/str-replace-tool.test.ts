import { describe, expect, it } from 'vitest';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import type { MemorySandboxCall } from '../testing/memory-sandbox.js';
import { createToolContext } from './create-tool-context.js';
import { fileOperationLock } from './file-operation-lock.js';
import { strReplaceTool } from './str-replace-tool.js';
import type { ToolConfigInput } from './tool-config.js';
import { writeFileTool } from './write-file-tool.js';

const P = '/mnt/user-data/workspace/app.py';

/** Holds the next matching sandbox call until the test lets it go. */
class CallHold {
  #armed: ((call: MemorySandboxCall) => boolean) | undefined;
  #release: (() => void) | undefined;
  #reached: (() => void) | undefined;
  reached: Promise<void> = Promise.resolve();

  arm(match: (call: MemorySandboxCall) => boolean): void {
    this.#armed = match;
    this.reached = new Promise((resolve) => (this.#reached = resolve));
  }

  intercept = (call: MemorySandboxCall): Promise<void> | undefined => {
    if (!this.#armed?.(call)) return undefined;
    this.#armed = undefined;
    this.#reached?.();
    return new Promise((resolve) => (this.#release = resolve));
  };

  release(): void {
    this.#release?.();
  }
}

function setup(config: ToolConfigInput = { readBeforeWrite: { enabled: false } }) {
  const hold = new CallHold();
  const provider = new MemorySandboxProvider({ sandboxOptions: { intercept: hold.intercept } });
  const ctxFor = (threadId: string) => createToolContext({ provider, threadId, config });
  const sandboxOf = async (threadId: string) => {
    const id = await provider.acquire({ threadId });
    return provider.sandboxes.get(id)!;
  };
  return { hold, provider, ctxFor, sandboxOf };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('§10.9 str_replace', () => {
  it('replaces a unique occurrence, or all of them with replace_all', async () => {
    const { ctxFor, sandboxOf } = setup();
    const sb = await sandboxOf('t1');
    sb.setFile(P, 'a = 1\nb = 2\nb = 2\n');
    const ctx = ctxFor('t1');
    expect(await strReplaceTool(ctx, { path: P, old_str: 'a = 1', new_str: 'a = 10' })).toBe('OK');
    expect(
      await strReplaceTool(ctx, { path: P, old_str: 'b = 2', new_str: 'b = 3', replace_all: true }),
    ).toBe('OK');
    expect(sb.fileText(P)).toBe('a = 10\nb = 3\nb = 3\n');
  });

  it('refuses an ambiguous old_str without replace_all and leaves the file untouched', async () => {
    const { ctxFor, sandboxOf } = setup();
    const sb = await sandboxOf('t1');
    sb.setFile(P, 'x\nx\n');
    expect(await strReplaceTool(ctxFor('t1'), { path: P, old_str: 'x', new_str: 'y' })).toBe(
      `Error: String to replace occurs 2 times in file: ${P}. Include more surrounding context in old_str to make it unique, or set replace_all to true.`,
    );
    expect(sb.fileText(P)).toBe('x\nx\n');
  });

  it('keeps $-sequences in new_str literal', async () => {
    const { ctxFor, sandboxOf } = setup();
    const sb = await sandboxOf('t1');
    sb.setFile(P, 'price\n');
    await strReplaceTool(ctxFor('t1'), { path: P, old_str: 'price', new_str: "$& costs $1 $'" });
    expect(sb.fileText(P)).toBe("$& costs $1 $'\n");
  });

  it('an empty file with a non-empty old_str reports the string as not found', async () => {
    const { ctxFor, sandboxOf } = setup();
    (await sandboxOf('t1')).setFile(P, '');
    expect(await strReplaceTool(ctxFor('t1'), { path: P, old_str: 'x', new_str: 'y' })).toBe(
      `Error: String to replace not found in file: ${P}`,
    );
  });

  it('an empty old_str is a no-op OK, with or without replace_all', async () => {
    const { ctxFor, sandboxOf } = setup();
    const sb = await sandboxOf('t1');
    sb.setFile(P, 'keep\n');
    const ctx = ctxFor('t1');
    expect(await strReplaceTool(ctx, { path: P, old_str: '', new_str: 'zzz' })).toBe('OK');
    expect(
      await strReplaceTool(ctx, { path: P, old_str: '', new_str: 'zzz', replace_all: true }),
    ).toBe('OK');
    expect(sb.fileText(P)).toBe('keep\n');
    expect(sb.calls.filter((c) => c.operation === 'writeFile')).toEqual([]);
  });

  it('maps a missing file and a permission failure to their messages', async () => {
    const provider = new MemorySandboxProvider({ sandboxOptions: { readOnlyPaths: ['/mnt/ro'] } });
    const ctx = createToolContext({
      provider,
      threadId: 't1',
      config: { readBeforeWrite: { enabled: false } },
    });
    expect(await strReplaceTool(ctx, { path: P, old_str: 'a', new_str: 'b' })).toBe(
      `Error: File not found: ${P}`,
    );
    provider.sandboxes.get('memory:default:t1')!.setFile('/mnt/ro/f.txt', 'a');
    expect(await strReplaceTool(ctx, { path: '/mnt/ro/f.txt', old_str: 'a', new_str: 'b' })).toBe(
      'Error: Permission denied accessing file: /mnt/ro/f.txt',
    );
  });

  it('two concurrent edits of one file in one sandbox are serialized and both land', async () => {
    const { hold, ctxFor, sandboxOf } = setup();
    const sb = await sandboxOf('t1');
    sb.setFile(P, 'alpha\nbeta\n');
    hold.arm((c) => c.operation === 'writeFile');
    const first = strReplaceTool(ctxFor('t1'), { path: P, old_str: 'alpha', new_str: 'ALPHA' });
    await hold.reached;
    const second = strReplaceTool(ctxFor('t1'), { path: P, old_str: 'beta', new_str: 'BETA' });
    await settle();
    // The second edit has not even read the file while the first one's write is pending.
    expect(sb.calls.filter((c) => c.operation === 'readFile')).toHaveLength(1);
    hold.release();
    expect(await Promise.all([first, second])).toEqual(['OK', 'OK']);
    expect(sb.fileText(P)).toBe('ALPHA\nBETA\n');
    expect(fileOperationLock.size).toBe(0);
  });

  it('the same path in two different sandboxes does not contend', async () => {
    const { hold, ctxFor, sandboxOf } = setup();
    const a = await sandboxOf('ta');
    const b = await sandboxOf('tb');
    a.setFile(P, 'one\n');
    b.setFile(P, 'one\n');
    hold.arm((c) => c.operation === 'writeFile');
    const held = strReplaceTool(ctxFor('ta'), { path: P, old_str: 'one', new_str: 'A' });
    await hold.reached;
    expect(await strReplaceTool(ctxFor('tb'), { path: P, old_str: 'one', new_str: 'B' })).toBe(
      'OK',
    );
    expect(b.fileText(P)).toBe('B\n');
    hold.release();
    expect(await held).toBe('OK');
    expect(a.fileText(P)).toBe('A\n');
  });

  it('an edit racing an append keeps both changes', async () => {
    const { hold, ctxFor, sandboxOf } = setup();
    const sb = await sandboxOf('t1');
    sb.setFile(P, 'start\n');
    hold.arm((c) => c.operation === 'writeFile');
    const edit = strReplaceTool(ctxFor('t1'), { path: P, old_str: 'start', new_str: 'begin' });
    await hold.reached;
    const append = writeFileTool(ctxFor('t1'), { path: P, content: 'appended\n', append: true });
    await settle();
    hold.release();
    expect(await Promise.all([edit, append])).toEqual(['OK', 'OK']);
    expect(sb.fileText(P)).toBe('begin\nappended\n');
  });
});
