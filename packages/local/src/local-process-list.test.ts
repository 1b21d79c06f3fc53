import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolContext, runToolCall } from '@sbx/core';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

/**
 * `process_list` on a host sandbox: the model sees its own command, with virtual paths, and no
 * cut of a listing ever lands inside a host path (a long thread id makes host paths long).
 */
describe('process_list on a LocalSandbox', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeAll(async () => {
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-local-list-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true });
  });
  afterAll(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  const threadId = `thread-${'x'.repeat(200)}`;
  const context = () =>
    createToolContext({
      provider,
      userId: 'u',
      threadId,
      config: { allowHostBash: true, processTools: true },
    });

  it('lists the command as the agent wrote it, virtual paths and all', async () => {
    const ctx = context();
    const command = 'sleep 30; cat /mnt/user-data/workspace/notes.txt';
    const started = await runToolCall('bash', { command, yield_time_ms: 10 }, ctx);
    const id = /process_id="(p\d+)"/.exec(started.text)?.[1];
    const listed = await runToolCall('process_list', {}, ctx);
    expect(listed.isError).toBe(false);
    expect(listed.text).toMatch(
      new RegExp(`^${id}\\trunning\\t\\d+s\\t${command.replace(/[.*]/g, '\\$&')}$`, 'm'),
    );
    expect(listed.text).not.toContain(baseDir.slice(0, 12));
    await runToolCall('process_kill', { process_id: id, signal: 'SIGKILL' }, ctx);
  });

  it('masks a host path in a listed command before cutting it to width', async () => {
    const ctx = context();
    await runToolCall('process_list', {}, ctx);
    const sandbox = provider.get(ctx.state.sandboxId!)!;
    const hostWorkspace = provider.threadData('u', threadId).workspacePath;
    // A command whose host path straddles the listing's width, started by an SDK caller.
    const handle = await sandbox.processes.start(
      `sleep 30 # ${'a'.repeat(50)} ${hostWorkspace}/deep/file`,
    );
    const listed = await runToolCall('process_list', {}, ctx);
    const line = listed.text.split('\n').find((l) => l.startsWith(`${handle.id}\t`))!;
    expect(line).toMatch(/a{50} \/mnt\/user-data\/\.\.\.$/);
    expect(line).not.toContain(baseDir.slice(0, 12));
    await handle.kill('SIGKILL');
  });
});
