import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runIsolated } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-hostile-paths-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

interface Timed {
  out: string;
  ms: number;
  heapMb: number;
}

/**
 * Path handling is linear: content rewriting, path translation and the bash path guard. Each case
 * runs through the agent tools in a child with a 256 MB heap and a time limit: the quadratic
 * versions took seconds to minutes and hundreds of MB, or aborted out of memory.
 */
async function toolCall(tool: string, args: string, allowHostBash = false): Promise<Timed> {
  const run = await runIsolated({
    timeoutMs: 60_000,
    maxOldSpaceMb: 256,
    script: `
      import { createToolContext, runTool } from '@sbx/core';
      import { LocalSandboxProvider } from '@sbx/local';
      const provider = new LocalSandboxProvider({ baseDir: ${JSON.stringify(base)}, allowHostBash: ${allowHostBash} });
      const context = createToolContext({ provider, userId: 'u', threadId: 't', config: { allowHostBash: ${allowHostBash} } });
      const args = ${args};
      const t0 = performance.now();
      const out = await runTool(${JSON.stringify(tool)}, args, context);
      const ms = performance.now() - t0;
      await provider.shutdown();
      console.log(JSON.stringify({ out: out.slice(0, 400), ms, heapMb: process.memoryUsage().heapUsed / 2 ** 20 }));
    `,
  });
  expect(run.timedOut, run.stderr).toBe(false);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Timed;
}

describe('hostile path arguments and contents', () => {
  it('write_file of 81 KB of repeated "/mnt/user-data/" is written without a quadratic blow-up', async () => {
    const r = await toolCall(
      'write_file',
      `{ path: '/mnt/user-data/workspace/x.txt', content: '/mnt/user-data/'.repeat(5400) }`,
    );
    expect(r.out).toMatch(/^OK/);
    expect(r.ms).toBeLessThan(5_000);
  });

  it('an append of 210 KB of repeated "/mnt/user-data/" is refused by the per-call cap, at once', async () => {
    const r = await toolCall(
      'write_file',
      `{ path: '/mnt/user-data/workspace/x.txt', content: '/mnt/user-data/'.repeat(14000), append: true }`,
    );
    expect(r.out).toMatch(
      /^Error: write_file content \(210000 bytes\) exceeds the 81920-byte single-call limit/,
    );
    expect(r.ms).toBeLessThan(2_000);
  });

  it('a 20 MB append is refused like a write, without the process running out of memory', async () => {
    const r = await toolCall(
      'write_file',
      `{ path: '/mnt/user-data/workspace/x.txt', content: 'x'.repeat(20 * 1024 * 1024), append: true }`,
    );
    expect(r.out).toMatch(/^Error: write_file content \(20971520 bytes\) exceeds/);
  });

  it('a 32 KB path argument is refused at once with a typed error that does not echo it', async () => {
    const r = await toolCall(
      'read_file',
      `{ path: '/mnt/user-data/workspace/' + 'a/'.repeat(16000) }`,
    );
    expect(r.out).toMatch(/^Error: .*at most 4096/);
    expect(r.out.length).toBeLessThan(400);
    expect(r.ms).toBeLessThan(2_000);
  });

  it('a NUL byte in a path is a typed error, not a TypeError', async () => {
    const r = await toolCall('read_file', `{ path: '/mnt/user-data/workspace/a\\u0000b' }`);
    expect(r.out).toMatch(/^Error: .*NUL/);
  });

  it("the bash path guard is linear on '$(' x 30,000 (90 KB, under the command cap)", async () => {
    const r = await toolCall('bash', `{ command: "echo " + "'$('".repeat(30000) }`, true);
    expect(r.ms).toBeLessThan(5_000);
  });
});
