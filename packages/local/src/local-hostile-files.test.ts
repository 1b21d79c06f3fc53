import { execFileSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { createToolContext, runTool } from '@sbx/core';
import { runIsolated } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-hostile-files-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

const workspaceOf = (user: string, thread: string) =>
  path.join(base, 'users', user, 'threads', thread, 'user-data/workspace');

describe('special files are refused before any blocking read', () => {
  it('read_file on a FIFO fails at once, and four of them do not stall another tenant', async () => {
    const provider = new LocalSandboxProvider({ baseDir: base });
    const evil = createToolContext({ provider, userId: 'm', threadId: 't' });
    const other = createToolContext({ provider, userId: 'o', threadId: 't' });
    await runTool('ls', { path: '/mnt/user-data/workspace' }, evil);
    execFileSync('mkfifo', [path.join(workspaceOf('m', 't'), 'pipe')]);
    await runTool('write_file', { path: '/mnt/user-data/workspace/n.txt', content: 'ok\n' }, other);

    const fifoReads = Array.from({ length: 4 }, () =>
      runTool('read_file', { path: '/mnt/user-data/workspace/pipe' }, evil),
    );
    const started = performance.now();
    expect(await runTool('read_file', { path: '/mnt/user-data/workspace/n.txt' }, other)).toBe(
      'ok\n',
    );
    expect(performance.now() - started).toBeLessThan(1_000);
    for (const out of await Promise.all(fifoReads))
      expect(out).toMatch(/^Error: .*Not a regular file/);
    expect(
      await runTool('write_file', { path: '/mnt/user-data/workspace/pipe', content: 'x' }, evil),
    ).toMatch(/^Error: /);
    await provider.shutdown();
  });
});

describe('large files are streamed, never read whole', () => {
  it('a ranged read of a 100 MB file (read-before-write on) grows memory by far less than the file', async () => {
    const file = path.join(workspaceOf('u', 't'), 'big.log');
    execFileSync('mkdir', ['-p', path.dirname(file)]);
    const out = createWriteStream(file);
    const line = `${'x'.repeat(99)}\n`;
    const chunk = line.repeat(10_000);
    for (let i = 0; i < 100; i++) {
      if (!out.write(chunk)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');

    const run = await runIsolated({
      timeoutMs: 60_000,
      maxOldSpaceMb: 128,
      script: `
        import { createToolContext, runTool } from '@sbx/core';
        import { LocalSandboxProvider } from '@sbx/local';
        const provider = new LocalSandboxProvider({ baseDir: ${JSON.stringify(base)} });
        const context = createToolContext({ provider, userId: 'u', threadId: 't' });
        await runTool('ls', { path: '/mnt/user-data/workspace' }, context);
        const before = process.memoryUsage().rss;
        let peak = before;
        const sample = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
        const text = await runTool('read_file', { path: '/mnt/user-data/workspace/big.log', start_line: 1, end_line: 3 }, context);
        const append = await runTool('write_file', { path: '/mnt/user-data/workspace/big.log', content: 'tail\\n', append: true }, context);
        const whole = await runTool('read_file', { path: '/mnt/user-data/workspace/big.log' }, context);
        clearInterval(sample);
        peak = Math.max(peak, process.memoryUsage().rss);
        await provider.shutdown();
        console.log(JSON.stringify({ lines: text.split('\\n').length, append, whole: whole.slice(0, 120), growthMb: (peak - before) / 2 ** 20 }));
      `,
    });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as {
      lines: number;
      append: string;
      whole: string;
      growthMb: number;
    };
    expect(report.lines).toBe(3);
    // The read-before-write mark of the ranged read lets the append through without reading it all.
    expect(report.append).toBe('OK');
    expect(report.whole).toMatch(/^Error: .*too large to read whole/);
    expect(report.growthMb).toBeLessThan(50);
  });
});
