import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolContext, runTool } from '@sbx/core';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

/**
 * The tool layer validates paths and masks host paths for host-backed sandboxes. A LocalSandbox
 * reports its own layout, so a host that passes no `ToolContext.local` still gets that protection.
 */
describe('LocalSandbox reports its tool environment to the tool layer', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeAll(async () => {
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-local-toolenv-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true });
  });
  afterAll(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  const context = () =>
    createToolContext({
      provider,
      userId: 'u1',
      threadId: 't1',
      config: { allowHostBash: true },
    });

  it('bash starts in the workspace and its output shows virtual paths only', async () => {
    const out = await runTool('bash', { command: 'pwd' }, context());
    expect(out.trim()).toBe('/mnt/user-data/workspace');
    expect(out).not.toContain(baseDir);
  });

  it('file tools refuse host paths outside the virtual roots', async () => {
    const out = await runTool('read_file', { path: '/etc/hostname' }, context());
    expect(out.startsWith('Error:')).toBe(true);
  });

  it('the sandbox exposes its thread directories', async () => {
    const ctx = context();
    await runTool('ls', { path: '/mnt/user-data/workspace' }, ctx);
    const sandbox = provider.get(ctx.state.sandboxId ?? '');
    expect(sandbox).toBeDefined();
    const env = (sandbox as unknown as { localToolEnvironment?: { threadData?: object } })
      .localToolEnvironment;
    expect(env?.threadData).toEqual(provider.threadData('u1', 't1'));
  });
});

describe('host bash is one switch', () => {
  it('a provider built with allowHostBash runs bash without the tool config repeating it; an explicit false still refuses', async () => {
    const base = await mkdtemp(path.join(tmpdir(), 'sbx-onebash-'));
    const provider = new LocalSandboxProvider({ baseDir: base, allowHostBash: true });
    try {
      const implicit = createToolContext({ provider, userId: 'u', threadId: 't' });
      expect(await runTool('bash', { command: 'echo on' }, implicit)).toBe('on\n');
      const refused = createToolContext({
        provider,
        userId: 'u',
        threadId: 't',
        config: { allowHostBash: false },
      });
      expect(await runTool('bash', { command: 'echo on' }, refused)).toMatch(
        /^Error: Host bash execution is disabled/,
      );
    } finally {
      await provider.shutdown();
      await rm(base, { recursive: true, force: true });
    }
  });
});

describe('the /mnt/user-data root on a local sandbox', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeAll(async () => {
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-local-root-'));
    provider = new LocalSandboxProvider({ baseDir });
  });
  afterAll(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('ls, glob and grep of the root cover workspace, uploads and outputs; writing it is refused', async () => {
    const ctx = createToolContext({ provider, userId: 'u1', threadId: 'root' });
    await runTool(
      'write_file',
      { path: '/mnt/user-data/workspace/a.txt', content: 'needle\n' },
      ctx,
    );
    await runTool(
      'write_file',
      { path: '/mnt/user-data/outputs/b.txt', content: 'needle 2\n' },
      ctx,
    );
    for (const root of ['/mnt/user-data', '/mnt/user-data/']) {
      expect(await runTool('ls', { path: root }, ctx)).toBe(
        [
          '/mnt/user-data/outputs/',
          '/mnt/user-data/outputs/b.txt',
          '/mnt/user-data/uploads/',
          '/mnt/user-data/workspace/',
          '/mnt/user-data/workspace/a.txt',
        ].join('\n'),
      );
      expect(await runTool('glob', { path: root, pattern: '*.txt' }, ctx)).toBe(
        [
          `Found 2 paths under ${root}`,
          '1. /mnt/user-data/outputs/b.txt',
          '2. /mnt/user-data/workspace/a.txt',
        ].join('\n'),
      );
      expect(await runTool('grep', { path: root, pattern: 'needle 2' }, ctx)).toBe(
        [`Found 1 match under ${root}`, '/mnt/user-data/outputs/b.txt:1: needle 2'].join('\n'),
      );
    }
    expect(await runTool('write_file', { path: '/mnt/user-data', content: 'x' }, ctx)).toMatch(
      /^Error: \/mnt\/user-data itself is not writable/,
    );
  });
});
