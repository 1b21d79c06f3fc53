import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemoryCommandHandler } from '../testing/memory-sandbox.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { Deferred, track } from '../testing/deferred.js';
import { createToolContext } from './create-tool-context.js';
import { hostShellThread } from '../testing/host-shell-sandbox-fixture.js';
import { runToolCall } from './run-tool.js';
import type { ToolContext } from './tool-context.js';

describe('ToolCallResult.command: what a command call reports as data', () => {
  let base: string;
  let workspace: string;

  beforeAll(async () => {
    base = await mkdtemp(path.join(tmpdir(), 'sbx-command-details-'));
    workspace = path.join(base, 'user-data', 'workspace');
    for (const dir of ['workspace', 'uploads', 'outputs']) {
      await mkdir(path.join(base, 'user-data', dir), { recursive: true });
    }
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  function thread(onCommand: MemoryCommandHandler, extra: Partial<ToolContext> = {}) {
    const provider = new MemorySandboxProvider({
      idPrefix: 'local',
      sandboxOptions: { onCommand },
    });
    return createToolContext({
      provider,
      userId: 'alice',
      threadId: 't1',
      config: { allowHostBash: true },
      local: {
        threadData: {
          workspacePath: workspace,
          uploadsPath: path.join(base, 'user-data', 'uploads'),
          outputsPath: path.join(base, 'user-data', 'outputs'),
        },
      },
      ...extra,
    });
  }

  it('gives a finished command its status and both streams', async () => {
    const ok = await runToolCall(
      'bash',
      { command: 'x' },
      thread(() => ({ stdout: 'out\n', stderr: 'err\n' })),
    );
    expect(ok.command).toEqual({
      exitCode: 0,
      running: false,
      timedOut: false,
      stdout: 'out\n',
      stderr: 'err\n',
      truncated: false,
    });
    const failed = await runToolCall(
      'bash',
      { command: 'x' },
      thread(() => ({ stdout: '', stderr: 'boom\n', exitCode: 3 })),
    );
    expect(failed).toMatchObject({
      isError: true,
      error: { code: 'COMMAND_FAILED' },
      command: { exitCode: 3, running: false, stderr: 'boom\n' },
    });
    const timedOut = await runToolCall(
      'bash',
      { command: 'x' },
      thread(() => ({ stdout: 'partial\n', timedOut: true })),
    );
    expect(timedOut).toMatchObject({
      error: { code: 'COMMAND_TIMEOUT' },
      command: { exitCode: null, timedOut: true, stdout: 'partial\n' },
    });
  });

  it('masks host paths and redacts secrets in the streams as in the text', async () => {
    const token = Buffer.from('c2stbGl2ZS0xMjM0NTY3ODkw', 'base64').toString();
    const result = await runToolCall(
      'bash',
      { command: 'x' },
      thread(() => ({ stdout: `at ${workspace}/a\n`, stderr: `key ${token}\n` }), {
        env: { API_TOKEN: token },
      }),
    );
    expect(result.command).toMatchObject({
      stdout: 'at /mnt/user-data/workspace/a\n',
      stderr: 'key [redacted]\n',
    });
    expect(JSON.stringify(result)).not.toContain(token);
    expect(JSON.stringify(result)).not.toContain(workspace);
  });

  it('bounds the two streams together to bashOutputMaxChars', async () => {
    const result = await runToolCall(
      'bash',
      { command: 'x' },
      thread(() => ({ stdout: 'o'.repeat(5_000), stderr: 'e'.repeat(5_000) }), {
        config: { allowHostBash: true, bashOutputMaxChars: 1_000 },
      }),
    );
    const command = result.command!;
    expect(command.stdout.length + command.stderr.length).toBeLessThanOrEqual(1_000);
    expect(command.stdout.length).toBeGreaterThan(400);
    expect(command.stderr.length).toBeGreaterThan(400);
    expect(command.truncated).toBe(true);
    const short = await runToolCall(
      'bash',
      { command: 'x' },
      thread(() => ({ stdout: 'o'.repeat(5_000), stderr: 'e'.repeat(10) }), {
        config: { allowHostBash: true, bashOutputMaxChars: 1_000 },
      }),
    );
    expect(short.command?.stderr).toBe('e'.repeat(10));
    expect(short.command!.stdout.length).toBe(990);
  });

  it('is absent for a refusal and for tools that run no command', async () => {
    const context = thread(() => 'x');
    expect((await runToolCall('bash', { command: 'cat /etc/passwd' }, context)).command).toBe(
      undefined,
    );
    expect((await runToolCall('ls', { path: '/mnt/user-data' }, context)).command).toBe(undefined);
  });

  it('gives a yielded command its process id while it runs, and its status once it ended', async () => {
    const { context, clock, fifo } = await hostShellThread(base, { processTools: true });
    const first = new Deferred();
    const call = track(
      runToolCall(
        'bash',
        { command: `echo first; read go < '${fifo}'; echo done >&2; exit 4`, yield_time_ms: 500 },
        context,
        { onOutput: () => first.resolve() },
      ),
    );
    // Output comes after the call set its yield timer (I/O after the start's continuations).
    await first.promise;
    expect(clock.nextDueAt()).toBe(500);
    await clock.advance(500);
    const yielded = await call.promise;
    const id = yielded.command?.processId;
    expect(yielded).toMatchObject({
      isError: false,
      command: { exitCode: null, running: true, timedOut: false, processId: expect.any(String) },
    });
    await writeFile(fifo, 'go\n');
    const ended = await runToolCall(
      'process_output',
      { process_id: id, wait_ms: 600_000 },
      context,
    );
    expect(ended.command).toMatchObject({
      exitCode: 4,
      running: false,
      processId: id,
      stderr: 'done\n',
    });
  });
});
