import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SandboxRuntimeError } from '../errors/errors.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import type { MemorySandboxOptions } from '../testing/memory-sandbox.js';
import { createToolContext } from './create-tool-context.js';
import type { ToolConfigInput } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import { writeFileTool } from './write-file-tool.js';

const P = '/mnt/user-data/outputs/report.md';

function setup(config: ToolConfigInput = {}, sandboxOptions: MemorySandboxOptions = {}) {
  const provider = new MemorySandboxProvider({ sandboxOptions });
  const ctx = createToolContext({ provider, threadId: 't1', config });
  const sandbox = () => provider.sandboxes.get('memory:default:t1')!;
  return { ctx, provider, sandbox };
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('§10.9 write_file', () => {
  it('creates, overwrites and appends, creating parent directories', async () => {
    const { ctx, sandbox } = setup({ readBeforeWrite: { enabled: false } });
    expect(await writeFileTool(ctx, { path: P, content: 'one\n' })).toBe('OK');
    expect(await writeFileTool(ctx, { path: P, content: 'two\n' })).toBe('OK');
    expect(await writeFileTool(ctx, { path: P, content: 'three\n', append: true })).toBe('OK');
    expect(sandbox().fileText(P)).toBe('two\nthree\n');
  });

  it('maps permission and is-a-directory failures to their messages', async () => {
    const { ctx } = setup(
      {},
      { readOnlyPaths: ['/mnt/skills'], files: { '/mnt/user-data/outputs/keep.txt': 'k' } },
    );
    expect(await writeFileTool(ctx, { path: '/mnt/skills/x.md', content: 'x' })).toBe(
      'Error: Permission denied writing to file: /mnt/skills/x.md',
    );
    expect(
      await writeFileTool(ctx, { path: '/mnt/user-data/outputs', content: 'x', append: true }),
    ).toBe('Error: Path is a directory, not a file: /mnt/user-data/outputs');
  });

  it('reports a short low-level failure verbatim with the requested path', async () => {
    const { ctx } = setup(
      {},
      {
        intercept: (call) => {
          if (call.operation === 'writeFile') throw new Error('disk quota exceeded');
        },
      },
    );
    expect(await writeFileTool(ctx, { path: P, content: 'x' })).toBe(
      `Error: Failed to write file '${P}': Error: disk quota exceeded`,
    );
  });

  it('bounds a long failure to 2000 chars keeping head and tail, with host paths masked', async () => {
    const base = await mkdtemp(path.join(tmpdir(), 'sbx-write-'));
    try {
      const outputs = path.join(base, 'outputs');
      const provider = new MemorySandboxProvider({
        idPrefix: 'local',
        sandboxOptions: {
          intercept: (call) => {
            if (call.operation === 'writeFile') {
              throw new Error(`HEAD ${outputs}/report.md ${'x'.repeat(5000)} TAIL`);
            }
          },
        },
      });
      const ctx: ToolContext = createToolContext({
        provider,
        threadId: 't1',
        local: {
          threadData: {
            workspacePath: path.join(base, 'workspace'),
            uploadsPath: path.join(base, 'uploads'),
            outputsPath: outputs,
          },
        },
      });
      const out = await writeFileTool(ctx, { path: P, content: 'x' });
      expect(out.length).toBeLessThanOrEqual(2000);
      expect(out).toMatch(
        /^Error: Failed to write file '\/mnt\/user-data\/outputs\/report.md': Error: HEAD /,
      );
      expect(out).toContain('HEAD /mnt/user-data/outputs/report.md');
      expect(out).not.toContain(base);
      expect(out).toMatch(/\n\.\.\. \[write_file error truncated: \d+ chars skipped\] \.\.\.\n/);
      expect(out.endsWith('TAIL')).toBe(true);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it('formats a failure while acquiring the sandbox the same way', async () => {
    const { ctx, provider } = setup();
    provider.admit = () => {
      throw new SandboxRuntimeError('no capacity for you');
    };
    expect(await writeFileTool(ctx, { path: P, content: 'x' })).toBe(
      `Error: Failed to write file '${P}': SandboxRuntimeError: no capacity for you`,
    );
  });

  describe('single-call size guard', () => {
    const big = 'é'.repeat(50_000); // 100000 UTF-8 bytes

    it('passes content under the 80 KiB default and refuses content over it', async () => {
      const { ctx, sandbox } = setup();
      expect(await writeFileTool(ctx, { path: P, content: 'x'.repeat(81_920) })).toBe('OK');
      const out = await writeFileTool(ctx, { path: '/mnt/user-data/outputs/b.md', content: big });
      expect(out).toMatch(
        /^Error: write_file content \(100000 bytes\) exceeds the 81920-byte single-call limit\./,
      );
      expect(out).toContain('str_replace');
      expect(out).toContain('append=True');
      expect(sandbox().fileText('/mnt/user-data/outputs/b.md')).toBeUndefined();
    });

    it('applies to appends too, one call at a time (divergence: the reference leaves appends unbounded)', async () => {
      const { ctx } = setup({ readBeforeWrite: { enabled: false } });
      const out = await writeFileTool(ctx, { path: P, content: big, append: true });
      expect(out).toMatch(
        /^Error: write_file content \(100000 bytes\) exceeds the 81920-byte single-call limit\. Append it in smaller parts/,
      );
      const half = 'é'.repeat(25_000);
      expect(await writeFileTool(ctx, { path: P, content: half, append: true })).toBe('OK');
      expect(await writeFileTool(ctx, { path: P, content: half, append: true })).toBe('OK');
    });

    it('reads SBX_WRITE_FILE_MAX_BYTES on every call: raise, disable, malformed falls back', async () => {
      const { ctx } = setup({ readBeforeWrite: { enabled: false } });
      vi.stubEnv('SBX_WRITE_FILE_MAX_BYTES', '200000');
      expect(await writeFileTool(ctx, { path: P, content: big })).toBe('OK');
      vi.stubEnv('SBX_WRITE_FILE_MAX_BYTES', '0');
      expect(await writeFileTool(ctx, { path: P, content: big + big })).toBe('OK');
      vi.stubEnv('SBX_WRITE_FILE_MAX_BYTES', 'lots');
      expect(await writeFileTool(ctx, { path: P, content: big })).toContain('81920-byte');
    });

    it('a configured limit wins over the environment', async () => {
      const { ctx } = setup({ writeFileMaxBytes: 10 });
      vi.stubEnv('SBX_WRITE_FILE_MAX_BYTES', '0');
      expect(await writeFileTool(ctx, { path: P, content: 'x'.repeat(11) })).toContain(
        '(11 bytes) exceeds the 10-byte',
      );
    });
  });
});
