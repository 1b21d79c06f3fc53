import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxLeaseManager, createToolContext, getToolDefinitions, runToolCall } from '@sbx/core';
import type { ToolConfigInput } from '@sbx/core';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

/**
 * The tools' structured results and bash's yield mode on a real host sandbox: success and failure
 * come from the command's status, never from its text, and a yielded command is reached again
 * through the process tools.
 */
describe('bash results and the process tools on a LocalSandbox', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;
  let thread = 0;

  beforeAll(async () => {
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-local-proctools-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true });
  });
  afterAll(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  const context = (config: ToolConfigInput = {}) =>
    createToolContext({
      provider,
      userId: 'u1',
      threadId: `t${++thread}`,
      config: { allowHostBash: true, ...config },
      env: { SBX_TOOL_SECRET: 'very-secret-value' },
    });

  it('a command printing "Error:" and exiting 0 is a success; `false` is a failure', async () => {
    const ok = await runToolCall('bash', { command: 'echo "Error: only text"' }, context());
    expect(ok).toMatchObject({ text: 'Error: only text\n', isError: false });
    expect(ok.command).toMatchObject({ exitCode: 0, stdout: 'Error: only text\n' });
    const failed = await runToolCall('bash', { command: 'false' }, context());
    expect(failed).toMatchObject({ isError: true, error: { code: 'COMMAND_FAILED' } });
    expect(failed.text).toBe('\nExit Code: 1');
  });

  it('a command killed at its limit is a COMMAND_TIMEOUT failure', async () => {
    const out = await runToolCall(
      'bash',
      { command: 'sleep 30' },
      context({ bashCommandTimeoutSeconds: 1 }),
    );
    expect(out).toMatchObject({ isError: true, error: { code: 'COMMAND_TIMEOUT' } });
    expect(out.text).toMatch(/^Command timed out after 1 second/);
  });

  it('read_file of a log starting with "Error:" is a success', async () => {
    const ctx = context();
    await runToolCall(
      'write_file',
      { path: '/mnt/user-data/workspace/log.txt', content: 'Error: logged\n' },
      ctx,
    );
    const read = await runToolCall('read_file', { path: '/mnt/user-data/workspace/log.txt' }, ctx);
    expect(read).toMatchObject({ isError: false, text: 'Error: logged\n' });
  });

  it('without processTools bash refuses yield_time_ms and the process tools refuse', async () => {
    const ctx = context();
    const yielded = await runToolCall('bash', { command: 'true', yield_time_ms: 10 }, ctx);
    expect(yielded).toMatchObject({ isError: true, error: { code: 'INVALID_ARGUMENTS' } });
    const listed = await runToolCall('process_list', {}, ctx);
    expect(listed).toMatchObject({ isError: true, error: { code: 'UNKNOWN_TOOL' } });
    expect(getToolDefinitions().map((d) => d.name)).toHaveLength(7);
    const bash = getToolDefinitions().find((d) => d.name === 'bash')!;
    expect(Object.keys(bash.inputSchema.properties as object)).not.toContain('yield_time_ms');
  });

  it('with processTools the definitions offer the yield mode and the four process tools', () => {
    const names = getToolDefinitions({ processTools: true }).map((d) => d.name);
    expect(names).toEqual([
      'bash',
      'ls',
      'glob',
      'grep',
      'read_file',
      'write_file',
      'str_replace',
      'process_output',
      'process_write',
      'process_kill',
      'process_list',
    ]);
    const bash = getToolDefinitions({ processTools: true, strict: true })[0]!;
    expect(Object.keys(bash.inputSchema.properties as object)).toContain('yield_time_ms');
  });

  it('a yielded command that ends in time reads like a one-shot call, status included', async () => {
    const ctx = context({ processTools: true });
    const out = await runToolCall(
      'bash',
      { command: 'echo out; echo err >&2; exit 2', yield_time_ms: 10_000 },
      ctx,
    );
    expect(out).toMatchObject({ isError: true, error: { code: 'COMMAND_FAILED' } });
    expect(out.text).toBe('out\n\nStd Error:\nerr\n\nExit Code: 2');
  });

  it('a yielded server is polled, fed, listed and killed through the process tools', async () => {
    const ctx = context({ processTools: true });
    const started = await runToolCall(
      'bash',
      {
        command:
          'echo "listening in $(pwd) with $SBX_TOOL_SECRET"; while read line; do echo "got:$line"; done',
        yield_time_ms: 1_500,
      },
      ctx,
    );
    expect(started.isError).toBe(false);
    const id = /process_id="(p\d+)"/.exec(started.text)?.[1];
    expect(id).toBeDefined();
    // Host paths are masked and the request's secret redacted, as in one-shot output.
    expect(started.text).toContain('listening in /mnt/user-data/workspace');
    expect(started.text).not.toContain('very-secret-value');
    expect(started.text).not.toContain(baseDir);

    const answered = await runToolCall(
      'process_write',
      { process_id: id, input: 'ping\n', wait_ms: 1_500 },
      ctx,
    );
    expect(answered.text).toContain('got:ping');
    expect(answered.text).not.toContain('listening');
    expect(answered.text).toMatch(/\[process p\d+ is running\]$/);

    const idle = await runToolCall('process_output', { process_id: id }, ctx);
    expect(idle.text).toMatch(/^\(no new output\)\n/);

    const listed = await runToolCall('process_list', {}, ctx);
    expect(listed.text).toMatch(new RegExp(`^${id}\\trunning\\t`, 'm'));

    const killed = await runToolCall('process_kill', { process_id: id }, ctx);
    expect(killed.text).toMatch(/\[process p\d+ was ended by SIGTERM\]$/);

    const gone = await runToolCall('process_output', { process_id: 'p999' }, ctx);
    expect(gone).toMatchObject({ isError: true, error: { code: 'PROCESS_NOT_FOUND' } });
  });

  it('refuses bad process tool arguments with a typed error', async () => {
    const ctx = context({ processTools: true });
    const bad = await runToolCall('process_kill', { process_id: 'p1', signal: 'SIGSTOP' }, ctx);
    expect(bad).toMatchObject({ isError: true, error: { code: 'INVALID_ARGUMENTS' } });
    const long = await runToolCall('process_output', { process_id: 'x'.repeat(65) }, ctx);
    expect(long).toMatchObject({ isError: true, error: { code: 'INVALID_ARGUMENTS' } });
  });

  it('a process tool acquires through the execution lease like every tool', async () => {
    const manager = new SandboxLeaseManager(provider);
    const ctx = createToolContext({
      provider,
      userId: 'u1',
      threadId: `t${++thread}`,
      config: { allowHostBash: true, processTools: true },
      leaseManager: manager,
      leaseOwnerId: 'agent:proc',
    });
    const listed = await runToolCall('process_list', {}, ctx);
    expect(listed.isError).toBe(false);
    expect(manager.bindingFor('agent:proc')).toBe(ctx.state.sandboxId);
    expect(ctx.state.sandboxId).toBeDefined();
  });
});
