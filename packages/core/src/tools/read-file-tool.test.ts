import { describe, expect, it } from 'vitest';
import type { ReadFileOptions } from '../contract/sandbox.js';
import { MemorySandbox } from '../testing/memory-sandbox.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { createToolContext } from './create-tool-context.js';
import { readFileTool } from './read-file-tool.js';
import type { ToolConfigInput } from './tool-config.js';

const FILE = '/mnt/user-data/workspace/lines.txt';

class RangeRecordingSandbox extends MemorySandbox {
  readonly ranges: (ReadFileOptions | undefined)[] = [];
  override readFile(path: string, options?: ReadFileOptions): Promise<string> {
    this.ranges.push(options);
    return super.readFile(path, options);
  }
}

function setup(config: ToolConfigInput = {}) {
  const provider = new MemorySandboxProvider();
  const sandbox = new RangeRecordingSandbox('memory:default:t1', {
    files: {
      [FILE]: 'line1\nline2\nline3\nline4\nline5\n',
      '/mnt/user-data/uploads/sheet.xlsx': new Uint8Array([
        0x50, 0x4b, 0x03, 0x04, 0xff, 0xfe, 0x00,
      ]),
      '/mnt/user-data/workspace/cjk.md': '你好，世界\n',
      '/mnt/user-data/workspace/empty.txt': '',
    },
    readOnlyPaths: [],
    deniedPaths: ['/mnt/user-data/workspace/secret'],
  });
  provider.sandboxes.set(sandbox.id, sandbox);
  const ctx = createToolContext({ provider, threadId: 't1', config });
  return { ctx, sandbox };
}

describe('§10.9 read_file', () => {
  it('reads a tail from start_line, a head to end_line, an inclusive range, clamping past EOF', async () => {
    const { ctx } = setup();
    expect(await readFileTool(ctx, { path: FILE, start_line: 3 })).toBe('line3\nline4\nline5');
    expect(await readFileTool(ctx, { path: FILE, end_line: 2 })).toBe('line1\nline2');
    expect(await readFileTool(ctx, { path: FILE, start_line: 2, end_line: 4 })).toBe(
      'line2\nline3\nline4',
    );
    expect(await readFileTool(ctx, { path: FILE, start_line: 4, end_line: 99 })).toBe(
      'line4\nline5',
    );
    expect(await readFileTool(ctx, { path: FILE })).toBe('line1\nline2\nline3\nline4\nline5\n');
  });

  it('checks the range before touching the sandbox', async () => {
    const { ctx, sandbox } = setup();
    for (const start of [0, -1]) {
      expect(await readFileTool(ctx, { path: FILE, start_line: start })).toBe(
        '(start_line must be >= 1)',
      );
    }
    for (const end of [0, -1]) {
      expect(await readFileTool(ctx, { path: FILE, end_line: end })).toBe(
        '(end_line must be >= 1)',
      );
    }
    expect(await readFileTool(ctx, { path: FILE, start_line: 4, end_line: 2 })).toBe(
      '(start_line > end_line — no lines in range)',
    );
    expect(sandbox.calls).toEqual([]);
    expect(ctx.state.sandboxId).toBeUndefined();
  });

  it('says so when start_line is past the end, and shows an empty file as (empty)', async () => {
    const { ctx } = setup();
    expect(await readFileTool(ctx, { path: FILE, start_line: 99 })).toBe(
      '(start_line exceeds file length)',
    );
    expect(await readFileTool(ctx, { path: '/mnt/user-data/workspace/empty.txt' })).toBe('(empty)');
  });

  it('forwards ranges verbatim, one-sided ones included (the full read is the read mark)', async () => {
    const { ctx, sandbox } = setup({ readBeforeWrite: { enabled: false } });
    await readFileTool(ctx, { path: FILE, start_line: 2 });
    await readFileTool(ctx, { path: FILE, end_line: 3 });
    await readFileTool(ctx, { path: FILE, start_line: 2, end_line: 3 });
    await readFileTool(ctx, { path: FILE });
    expect(sandbox.ranges).toEqual([
      { startLine: 2 },
      { endLine: 3 },
      { startLine: 2, endLine: 3 },
      undefined,
    ]);
  });

  it('explains binary files (bash, pandas/openpyxl) instead of an unexpected error; CJK reads fine', async () => {
    const { ctx } = setup();
    const out = await readFileTool(ctx, { path: '/mnt/user-data/uploads/sheet.xlsx' });
    expect(out).toMatch(/^Error: cannot read '\/mnt\/user-data\/uploads\/sheet.xlsx' as text/);
    expect(out).toContain('binary');
    expect(out).toContain('bash');
    expect(out).toContain('openpyxl');
    expect(out).not.toContain('Unexpected error');
    expect(await readFileTool(ctx, { path: '/mnt/user-data/workspace/cjk.md' })).toBe(
      '你好，世界\n',
    );
  });

  it('maps missing files, directories and permission errors to their messages', async () => {
    const { ctx } = setup();
    expect(await readFileTool(ctx, { path: '/mnt/user-data/workspace/nope.txt' })).toBe(
      'Error: File not found: /mnt/user-data/workspace/nope.txt',
    );
    expect(await readFileTool(ctx, { path: '/mnt/user-data/workspace' })).toBe(
      'Error: Path is a directory, not a file: /mnt/user-data/workspace',
    );
    expect(await readFileTool(ctx, { path: '/mnt/user-data/workspace/secret/a' })).toBe(
      'Error: Permission denied reading file: /mnt/user-data/workspace/secret/a',
    );
  });

  it('head-truncates to read_file_output_max_chars', async () => {
    const { ctx, sandbox } = setup({ readFileOutputMaxChars: 200 });
    sandbox.setFile('/mnt/user-data/workspace/big.txt', 'x'.repeat(300));
    const out = await readFileTool(ctx, { path: '/mnt/user-data/workspace/big.txt' });
    expect(out).toHaveLength(199);
    expect(out).toContain('[truncated: showing first 98 of 300 chars.');
  });

  it('reports an unexpected failure as a result, never as an exception', async () => {
    const provider = new MemorySandboxProvider({
      sandboxOptions: {
        intercept: () => {
          throw new TypeError('disk on fire');
        },
      },
    });
    const ctx = createToolContext({ provider, threadId: 't1' });
    expect(await readFileTool(ctx, { path: FILE })).toBe(
      'Error: Unexpected error reading file: TypeError: disk on fire',
    );
  });
});
