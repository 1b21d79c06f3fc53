import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LOOP_PROBE_SCRIPT, runIsolated } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-hostile-search-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

interface Report {
  grep: string;
  readMs: number;
  read: string;
  worstLateMs: number;
}

/**
 * One tenant's hostile grep must not be felt by another: the whole scenario runs in a child (time
 * and memory limits), through the agent tools on one provider, with host bash off.
 */
describe('a hostile grep of one thread leaves other threads unaffected', () => {
  it('another thread reads within 100 ms and a 20 ms timer is never 100 ms late; the grep stops at its limit with what it found', async () => {
    const run = await runIsolated({
      timeoutMs: 60_000,
      script: `
        import { createToolContext, runTool } from '@sbx/core';
        import { LocalSandboxProvider } from '@sbx/local';
        const provider = new LocalSandboxProvider({ baseDir: ${JSON.stringify(base)}, searchTimeoutSeconds: 2 });
        const evil = createToolContext({ provider, userId: 'mallory', threadId: 'm1' });
        const other = createToolContext({ provider, userId: 'alice', threadId: 'a1' });
        await runTool('write_file', { path: '/mnt/user-data/workspace/a.txt', content: 'aaa$ first\\n' }, evil);
        await runTool('write_file', { path: '/mnt/user-data/workspace/b.txt', content: '${'a'.repeat(34)}!\\n' }, evil);
        await runTool('write_file', { path: '/mnt/user-data/workspace/n.txt', content: 'hello\\n' }, other);
        ${LOOP_PROBE_SCRIPT}
        const grep = runTool('grep', { path: '/mnt/user-data/workspace', pattern: '(a+)+\\\\$|first' }, evil);
        await new Promise((r) => setTimeout(r, 200));
        const t0 = performance.now();
        const read = await runTool('read_file', { path: '/mnt/user-data/workspace/n.txt' }, other);
        const readMs = performance.now() - t0;
        const grepText = await grep;
        stopLoopProbe();
        await provider.shutdown();
        console.log(JSON.stringify({ grep: grepText, readMs, read, worstLateMs: worstLateMs() }));
      `,
    });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as Report;
    expect(report.read).toBe('hello\n');
    expect(report.readMs).toBeLessThan(100);
    expect(report.worstLateMs).toBeLessThan(100);
    expect(report.grep).toMatch(
      /^Error: grep stopped after 2 s \(the search time limit, sandbox\.search_timeout_seconds\)/,
    );
    // The file scanned before the stall is kept.
    expect(report.grep).toContain('/mnt/user-data/workspace/a.txt:1: aaa$ first');
  });

  it('hostile glob, write and path arguments of one thread: another thread reads within 100 ms, the timer is never 100 ms late', async () => {
    const run = await runIsolated({
      timeoutMs: 60_000,
      script: `
        import { mkdirSync, writeFileSync } from 'node:fs';
        import { createToolContext, runTool } from '@sbx/core';
        import { LocalSandboxProvider } from '@sbx/local';
        const provider = new LocalSandboxProvider({ baseDir: ${JSON.stringify(base)} });
        const evil = createToolContext({ provider, userId: 'mallory', threadId: 'm1' });
        const other = createToolContext({ provider, userId: 'alice', threadId: 'a1' });
        await runTool('ls', { path: '/mnt/user-data/workspace' }, evil);
        const ws = ${JSON.stringify(base)} + '/users/mallory/threads/m1/user-data/workspace';
        for (let i = 0; i < 50; i++) writeFileSync(ws + '/' + 'a'.repeat(200) + i, 'x');
        await runTool('write_file', { path: '/mnt/user-data/workspace/n.txt', content: 'hello\\n' }, other);
        ${LOOP_PROBE_SCRIPT}
        const attacks = [
          () => runTool('glob', { path: '/mnt/user-data/workspace', pattern: '*a*a*a*a*a*a*a*a*b' }, evil),
          () => runTool('write_file', { path: '/mnt/user-data/workspace/w.txt', content: '/mnt/user-data/'.repeat(5400) }, evil),
          () => runTool('read_file', { path: '/mnt/user-data/workspace/' + 'a/'.repeat(16000) }, evil),
          () => runTool('grep', { path: '/mnt/user-data/workspace', pattern: 'x', glob: '*a*a*a*a*a*a*a*b' }, evil),
        ];
        let worstReadMs = 0;
        for (const attack of attacks) {
          const pending = attack();
          const t0 = performance.now();
          const read = await runTool('read_file', { path: '/mnt/user-data/workspace/n.txt' }, other);
          worstReadMs = Math.max(worstReadMs, performance.now() - t0);
          if (read !== 'hello\\n') throw new Error('unexpected read: ' + read);
          await pending;
        }
        stopLoopProbe();
        await provider.shutdown();
        console.log(JSON.stringify({ worstReadMs, worstLateMs: worstLateMs() }));
      `,
    });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { worstReadMs: number; worstLateMs: number };
    expect(report.worstReadMs).toBeLessThan(100);
    expect(report.worstLateMs).toBeLessThan(100);
  });
});
