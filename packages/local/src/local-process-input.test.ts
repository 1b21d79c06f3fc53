import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessInputBlockedError, createToolContext, runToolCall } from '@sbx/core';
import type { Sandbox } from '@sbx/core';
import { rejectionOf } from '@sbx/core/testing';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

/**
 * Input to a host process that never reads it: once the pipe is full a write can never complete,
 * so it must come back within its bound, typed, saying how much was taken.
 */
describe('LocalSandbox: writing to a process that does not read its input', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;
  let sandbox: Sandbox;

  beforeAll(async () => {
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-local-stdin-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true });
    sandbox = provider.get(await provider.acquire({ userId: 'u', threadId: 'stdin' }))!;
  });
  afterAll(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('a write larger than the pipe fails at its limit and reports the bytes taken', async () => {
    const sleeper = await sandbox.processes.start('exec sleep 1000');
    try {
      const total = 1024 * 1024;
      const error = await rejectionOf(sleeper.write(new Uint8Array(total), { timeoutMs: 300 }));
      expect(error).toBeInstanceOf(ProcessInputBlockedError);
      const blocked = error as ProcessInputBlockedError;
      expect(blocked.code).toBe('PROCESS_INPUT_BLOCKED');
      expect(blocked.totalBytes).toBe(total);
      expect(blocked.acceptedBytes).toBeLessThan(total);
      expect(blocked.message).toContain(`${blocked.acceptedBytes} of ${total} bytes were accepted`);
      expect(sleeper.info().status).toBe('running');
    } finally {
      await sleeper.kill('SIGKILL');
      await sleeper.wait();
    }
  });

  it('process_write returns a typed failure instead of hanging once the pipe is full', async () => {
    const ctx = createToolContext({
      provider,
      userId: 'u',
      threadId: 'stdin-tools',
      config: { allowHostBash: true, processTools: true },
    });
    const started = await runToolCall(
      'bash',
      { command: 'exec sleep 1000', yield_time_ms: 10 },
      ctx,
    );
    const id = /process_id="(p\d+)"/.exec(started.text)?.[1];
    expect(id).toBeDefined();
    // 64 Ki three-byte characters a call: the pipe (a socket here) fills after a few.
    const input = '\u20ac'.repeat(64 * 1024);
    let failure: Awaited<ReturnType<typeof runToolCall>> | undefined;
    for (let i = 0; i < 32 && failure === undefined; i++) {
      const out = await runToolCall('process_write', { process_id: id, input, wait_ms: 200 }, ctx);
      if (out.isError) failure = out;
    }
    expect(failure).toMatchObject({ isError: true, error: { code: 'PROCESS_INPUT_BLOCKED' } });
    expect(failure!.text).toMatch(/\d+ of 196608 bytes were accepted/);
    await runToolCall('process_kill', { process_id: id, signal: 'SIGKILL' }, ctx);
  });
});
