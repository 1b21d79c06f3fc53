import { describe, expect, it } from 'vitest';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { createToolContext } from './create-tool-context.js';
import { globTool } from './glob-tool.js';
import { grepTool } from './grep-tool.js';
import { lsTool } from './ls-tool.js';
import { GLOB_RESULT_LIMIT, GREP_RESULT_LIMIT, effectiveResultLimit } from './tool-config.js';
import type { ToolConfigInput } from './tool-config.js';

const W = '/mnt/user-data/workspace';

function setup(files: Record<string, string>, config: ToolConfigInput = {}) {
  const provider = new MemorySandboxProvider({ sandboxOptions: { files } });
  return createToolContext({ provider, threadId: 't1', config });
}

describe('§9A.3 glob', () => {
  const files = {
    [`${W}/app.py`]: 'print(1)\n',
    [`${W}/pkg/util.py`]: 'x\n',
    [`${W}/node_modules/dep/index.py`]: 'x\n',
    [`${W}/notes.txt`]: 'x\n',
  };

  it('lists numbered virtual paths, skipping ignored directories', async () => {
    expect(await globTool(setup(files), { pattern: '**/*.py', path: W })).toBe(
      [`Found 2 paths under ${W}`, `1. ${W}/app.py`, `2. ${W}/pkg/util.py`].join('\n'),
    );
  });

  it('says when nothing matched', async () => {
    expect(await globTool(setup(files), { pattern: '*.rs', path: W })).toBe(
      `No files matched under ${W}`,
    );
  });

  it('configured max 50 and requested 2: showing first 2 and the truncation notice', async () => {
    const ctx = setup(files, { globMaxResults: 50 });
    expect(await globTool(ctx, { pattern: '*', path: W, max_results: 2 })).toBe(
      [
        `Found 2 paths under ${W} (showing first 2)`,
        `1. ${W}/app.py`,
        `2. ${W}/notes.txt`,
        'Results truncated. Narrow the path or pattern to see fewer matches.',
      ].join('\n'),
    );
  });

  it('reports a missing root and a file root', async () => {
    const ctx = setup(files);
    expect(await globTool(ctx, { pattern: '*', path: `${W}/missing` })).toBe(
      `Error: Directory not found: ${W}/missing`,
    );
    expect(await globTool(ctx, { pattern: '*', path: `${W}/app.py` })).toBe(
      `Error: Path is not a directory: ${W}/app.py`,
    );
  });

  it('effective limit = min(clamp(requested), clamp(configured)); non-positive means default', () => {
    expect(effectiveResultLimit(2, 50, GLOB_RESULT_LIMIT)).toBe(2);
    expect(effectiveResultLimit(500, 50, GLOB_RESULT_LIMIT)).toBe(50);
    expect(effectiveResultLimit(5000, undefined, GLOB_RESULT_LIMIT)).toBe(200);
    expect(effectiveResultLimit(5000, 5000, GLOB_RESULT_LIMIT)).toBe(1000);
    expect(effectiveResultLimit(0, -1, GLOB_RESULT_LIMIT)).toBe(200);
    expect(effectiveResultLimit(1000, 1000, GREP_RESULT_LIMIT)).toBe(500);
    expect(effectiveResultLimit(undefined, 2.5, GREP_RESULT_LIMIT)).toBe(100);
  });
});

describe('§9A.4 grep', () => {
  const files = {
    [`${W}/a.py`]: 'TODO: one\nfine\n# todo two\n',
    [`${W}/b.txt`]: 'TODO in text\n',
    [`${W}/c.md`]: 'x (a+b) y\naab\n',
    [`${W}/bin.dat`]: 'TODO\u0000binary',
  };

  it('lists path:line: text matches, case-insensitive by default, skipping binary files', async () => {
    expect(await grepTool(setup(files), { pattern: 'todo', path: W })).toBe(
      [
        `Found 3 matches under ${W}`,
        `${W}/a.py:1: TODO: one`,
        `${W}/a.py:3: # todo two`,
        `${W}/b.txt:1: TODO in text`,
      ].join('\n'),
    );
  });

  it('honours glob, case_sensitive and literal', async () => {
    const ctx = setup(files);
    expect(await grepTool(ctx, { pattern: 'TODO', path: W, glob: '**/*.py' })).toContain(
      'Found 2 matches',
    );
    expect(await grepTool(ctx, { pattern: 'TODO', path: W, case_sensitive: true })).toContain(
      'Found 2 matches',
    );
    expect(await grepTool(ctx, { pattern: '(a+b)', path: W, literal: true })).toBe(
      [`Found 1 match under ${W}`, `${W}/c.md:1: x (a+b) y`].join('\n'),
    );
  });

  it('accepts a single file', async () => {
    expect(await grepTool(setup(files), { pattern: 'fine', path: `${W}/a.py` })).toBe(
      [`Found 1 match under ${W}/a.py`, `${W}/a.py:2: fine`].join('\n'),
    );
  });

  it('max_results 2 of 3 matches: showing first 2 and the truncation notice', async () => {
    expect(await grepTool(setup(files), { pattern: 'todo', path: W, max_results: 2 })).toBe(
      [
        `Found 2 matches under ${W} (showing first 2)`,
        `${W}/a.py:1: TODO: one`,
        `${W}/a.py:3: # todo two`,
        'Results truncated. Narrow the path or add a glob filter.',
      ].join('\n'),
    );
  });

  it('reports an invalid regex, no matches and a missing root', async () => {
    const ctx = setup(files);
    expect(await grepTool(ctx, { pattern: '[invalid', path: W })).toMatch(
      /^Error: Invalid regex pattern/,
    );
    expect(await grepTool(ctx, { pattern: 'zzz', path: W })).toBe(`No matches found under ${W}`);
    expect(await grepTool(ctx, { pattern: 'x', path: `${W}/nope` })).toBe(
      `Error: Directory not found: ${W}/nope`,
    );
  });
});

describe('§9A.2 ls', () => {
  it('lists two levels of virtual paths, directories with a trailing /', async () => {
    const ctx = setup({ [`${W}/a/b/c.txt`]: 'x', [`${W}/top.txt`]: 'x' });
    expect(await lsTool(ctx, { path: W })).toBe(
      [`${W}/a/`, `${W}/a/b/`, `${W}/top.txt`].join('\n'),
    );
  });

  it('shows an empty or missing directory as (empty)', async () => {
    const ctx = setup({ [`${W}/a/x.txt`]: 'x' });
    expect(await lsTool(ctx, { path: '/mnt/user-data/outputs' })).toBe('(empty)');
    expect(await lsTool(ctx, { path: `${W}/missing` })).toBe('(empty)');
  });

  it('head-truncates to ls_output_max_chars', async () => {
    const files = Object.fromEntries(
      Array.from({ length: 50 }, (_, i) => [`${W}/file-${String(i).padStart(3, '0')}.txt`, 'x']),
    );
    const out = await lsTool(setup(files, { lsOutputMaxChars: 300 }), { path: W });
    expect(out.length).toBeLessThanOrEqual(300);
    expect(out).toContain('Use a more specific path to see fewer results');
    expect(out.startsWith(`${W}/file-000.txt\n`)).toBe(true);
  });
});
