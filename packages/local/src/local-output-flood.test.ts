import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolContext, runToolCall } from '@sbx/core';
import type { ProcessHandle, Sandbox } from '@sbx/core';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

/** The floods of the benchmark: binary, `yes`, and one endless line without a line end. */
const FLOODS = ['cat /dev/urandom', 'yes', "yes | tr -d '\\n'"];

/**
 * One tenant's output floods must not cost another tenant its calls: output is read under
 * back-pressure, a bounded amount per turn of the loop, and kept raw until read.
 */
describe('LocalSandbox: a tenant flooding output', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;
  let flooding: Sandbox;
  let floodingId: string;

  beforeAll(async () => {
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-local-flood-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true });
    floodingId = await provider.acquire({ userId: 'noisy', threadId: 'flood' });
    flooding = provider.get(floodingId)!;
  });
  afterAll(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it("another thread's read_file completes while 16 floods run, and each flood keeps only its buffer", async () => {
    const floods: ProcessHandle[] = [];
    for (let i = 0; i < 16; i++) {
      floods.push(await flooding.processes.start(FLOODS[i % FLOODS.length]!));
    }
    const quiet = createToolContext({
      provider,
      userId: 'quiet',
      threadId: 'reader',
      config: { allowHostBash: true },
    });
    const written = await runToolCall(
      'write_file',
      { path: '/mnt/user-data/workspace/note.txt', content: 'hello\n' },
      quiet,
    );
    expect(written.isError).toBe(false);
    const read = await runToolCall(
      'read_file',
      { path: '/mnt/user-data/workspace/note.txt' },
      quiet,
    );
    expect(read).toMatchObject({ isError: false, text: 'hello\n' });
    for (const flood of floods) expect(flood.info().status).toBe('running');

    // The `yes` flood goes on past its buffer: what it printed beyond is dropped and counted.
    const yes = floods[1]!;
    let output = await yes.output();
    while (output.droppedBytes === 0) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      output = await yes.output();
    }
    expect(output.text.length).toBeLessThanOrEqual(1024 * 1024);
    expect(output.text.startsWith('y\n')).toBe(true);
    // The binary flood's kept output is at most its buffer decoded (U+FFFD is 3 bytes).
    const binary = await floods[0]!.output();
    expect(Buffer.byteLength(binary.text)).toBeLessThanOrEqual(3 * 1024 * 1024);

    await provider.release(floodingId);
    for (const flood of floods) expect(flood.info().status).toBe('exited');
    // Released: the ended floods' output is freed, and a reader learns it was dropped.
    const after = await yes.output({ since: output.cursor });
    expect(after.text).toBe('');
    expect(after.status).toBe('exited');
  });

  it('one endless line is shown in pieces of at most 64 KiB, none of it lost to a held line', async () => {
    const line = await flooding.processes.start("head -c 300000 /dev/zero | tr '\\0' 'a'");
    await line.wait();
    const output = await line.output();
    expect(output.text).toBe('a'.repeat(300_000));
  });
});
