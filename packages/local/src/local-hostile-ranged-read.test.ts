import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runIsolated } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-hostile-range-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('a ranged read returns at most what a whole read may (isolated)', () => {
  it('read_file from line 1 of 60 MB of short lines is refused at 16 MiB, not held whole', async () => {
    // The agent can grow a file call by call (80 KB appends); an open range then listed every
    // line of it in memory: out of this heap before the tool could cut the result.
    const run = await runIsolated({
      maxOldSpaceMb: 128,
      script: `
        import { openSync, writeSync, closeSync, mkdirSync } from 'node:fs';
        import path from 'node:path';
        import { createToolContext, runToolCall } from '@sbx/core';
        import { LocalSandboxProvider } from '@sbx/local';
        const base = ${JSON.stringify(base)};
        const workspace = path.join(base, 'users', 'u', 'threads', 't', 'user-data', 'workspace');
        mkdirSync(workspace, { recursive: true });
        const fd = openSync(path.join(workspace, 'grown.txt'), 'w');
        const chunk = Buffer.from('abcdefghij\\n'.repeat(100_000));
        for (let i = 0; i < 55; i++) writeSync(fd, chunk);
        closeSync(fd);
        const provider = new LocalSandboxProvider({ baseDir: base });
        const context = createToolContext({ provider, userId: 'u', threadId: 't' });
        const ranged = await runToolCall(
          'read_file', { path: '/mnt/user-data/workspace/grown.txt', start_line: 1 }, context,
        );
        const small = await runToolCall(
          'read_file',
          { path: '/mnt/user-data/workspace/grown.txt', start_line: 4_000_000, end_line: 4_000_001 },
          context,
        );
        console.log(JSON.stringify({ code: ranged.error?.code, text: ranged.text, small: small.text }));
        await provider.shutdown();
      `,
    });
    expect(run.timedOut, `timed out; stderr: ${run.stderr}`).toBe(false);
    expect(run.code, run.stderr.slice(-2_000)).toBe(0);
    const outcome = JSON.parse(run.stdout) as { code: string; text: string; small: string };
    expect(outcome.code).toBe('SANDBOX_FILE');
    expect(outcome.text).toMatch(
      /^Error: Lines 1 to \d+ of \/mnt\/user-data\/workspace\/grown.txt are more than 16777216 characters; read a smaller range/,
    );
    // A range that fits is still read, however far into the file.
    expect(outcome.small).toBe('abcdefghij\nabcdefghij');
  });
});
