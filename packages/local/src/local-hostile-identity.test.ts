import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createToolContext, runTool } from '@sbx/core';
import { recordingLogger } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

let base: string;
let provider: LocalSandboxProvider;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-hostile-identity-'));
  provider = new LocalSandboxProvider({ baseDir: base });
});
afterEach(async () => {
  await provider.shutdown();
  await rm(base, { recursive: true, force: true });
});

describe('a persisted sandbox id of another user is not honoured', () => {
  it("alice's context given bob's sandbox id reads and writes only alice's files", async () => {
    const bob = createToolContext({ provider, userId: 'bob', threadId: 'b1' });
    await runTool(
      'write_file',
      { path: '/mnt/user-data/workspace/secret.txt', content: 'bob-secret\n' },
      bob,
    );
    const bobId = bob.state.sandboxId!;

    const logger = recordingLogger();
    const alice = createToolContext({
      provider,
      userId: 'alice',
      threadId: 'b1',
      state: { sandboxId: bobId },
      logger,
    });
    const read = await runTool('read_file', { path: '/mnt/user-data/workspace/secret.txt' }, alice);
    expect(read).not.toContain('bob-secret');
    expect(read).toMatch(/^Error: /);
    expect(
      await runTool(
        'write_file',
        { path: '/mnt/user-data/workspace/secret.txt', content: 'alice\n' },
        alice,
      ),
    ).toBe('OK');
    const bobFile = path.join(base, 'users/bob/threads/b1/user-data/workspace/secret.txt');
    expect(await readFile(bobFile, 'utf8')).toBe('bob-secret\n');
    expect(alice.state.sandboxId).toBe('local:alice:b1');
    expect(
      logger.lines.some((l) => l.level === 'warn' && /another user or thread/.test(l.msg)),
    ).toBe(true);
  });

  it('the generic host-path sandbox id is never reused for a thread', async () => {
    const ctx = createToolContext({
      provider,
      userId: 'u',
      threadId: 't',
      state: { sandboxId: 'local' },
    });
    await runTool('ls', { path: '/mnt/user-data/workspace' }, ctx);
    expect(ctx.state.sandboxId).toBe('local:u:t');
  });
});
