import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AbortedError } from '@sbx/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPosixCommand } from './posix-runner.js';
import {
  fdTarget,
  hasProcFs,
  killGroupQuietly,
  liveProcessesInGroup,
} from './proc-test-support.js';
import { findShell } from './shell.js';

const posix = process.platform !== 'win32';

describe.skipIf(!posix)('runPosixCommand', () => {
  let shell: string;
  let tmp: string;
  const run = (
    command: string,
    extra: { timeoutMs?: number; signal?: AbortSignal; max?: number } = {},
  ) =>
    runPosixCommand({
      shell,
      command,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      timeoutMs: extra.timeoutMs ?? 30_000,
      signal: extra.signal,
      maxCaptureBytes: extra.max,
    });

  beforeAll(async () => {
    shell = await findShell();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sbx-runner-'));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('captures stdout, stderr and the exit status separately', async () => {
    const r = await run('echo out; echo err >&2; exit 2');
    expect(r).toMatchObject({ stdout: 'out\n', stderr: 'err\n', exitCode: 2, timedOut: false });
  });

  it('§10.6.73 stdin is the null device: `read x; echo got` returns with got', async () => {
    expect((await run('read x; echo "got:$x"')).stdout).toBe('got:\n');
  });

  it.skipIf(!hasProcFs)(
    '§10.6.68 `sleep & echo serving` returns while the background process still holds the pipe',
    async () => {
      const r = await run('(sleep 30; echo late) & echo serving');
      expect(r.stdout).toBe('serving\n');
      expect(r.stdout).not.toContain('late');
      // Returned although a member of the group is alive and holds stdout: no wait for EOF.
      expect((await liveProcessesInGroup(r.pid)).length).toBeGreaterThan(0);
      killGroupQuietly(r.pid);
    },
  );

  it.skipIf(!hasProcFs)(
    '§10.6.69 the stdout of a backgrounded process is a pipe (socket pair), not a deleted temp file',
    async () => {
      const r = await run('sleep 30 & echo $!');
      const bg = Number(r.stdout.trim());
      const target = await fdTarget(bg, 1);
      // Node connects child stdio through a socket pair, the same role as an anonymous pipe.
      expect(target).toMatch(/^(pipe|socket):\[\d+\]$/);
      expect(target).not.toContain('(deleted)');
      killGroupQuietly(r.pid);
    },
  );

  it.skipIf(!hasProcFs)(
    '§10.6.72 a timeout kills the whole process group, grandchildren included',
    async () => {
      const r = await run('echo $$; sleep 1000 & sleep 1000; wait', { timeoutMs: 1000 });
      expect(r.timedOut).toBe(true);
      const pgid = Number(r.stdout.trim());
      expect(pgid).toBe(r.pid);
      expect(await liveProcessesInGroup(pgid)).toEqual([]);
    },
  );

  it('keeps the partial output of a command that timed out', async () => {
    const r = await run('echo before; echo oops >&2; sleep 1000', { timeoutMs: 500 });
    expect(r).toMatchObject({ stdout: 'before\n', stderr: 'oops\n', timedOut: true });
  });

  it.skipIf(!hasProcFs)('an abort kills the group and rejects with AbortedError', async () => {
    const marker = path.join(tmp, 'abort.pid');
    const controller = new AbortController();
    const pending = run(`echo $$ > ${marker}; sleep 1000 & sleep 1000`, {
      signal: controller.signal,
    });
    // Abort once the command has provably started (bounded poll on its marker file).
    for (let i = 0; i < 2000; i++) {
      const size = await stat(marker).then(
        (s) => s.size,
        () => 0,
      );
      if (size > 0) break;
      await new Promise((r) => setImmediate(r));
    }
    controller.abort(new Error('user cancelled'));
    await expect(pending).rejects.toBeInstanceOf(AbortedError);
    const pgid = Number((await readFile(marker, 'utf8')).trim());
    expect(await liveProcessesInGroup(pgid)).toEqual([]);
  });

  it('refuses to start when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(run('echo never', { signal: controller.signal })).rejects.toBeInstanceOf(
      AbortedError,
    );
  });

  it('keeps the head of a stream beyond the cap and says how much was dropped', async () => {
    const r = await run('head -c 1000 /dev/zero | tr "\\0" a', { max: 100 });
    expect(r.stdout).toBe(
      `${'a'.repeat(100)}\n... [output truncated after 100 of 1000 bytes; remaining output discarded] ...`,
    );
  });

  it('collects large output completely when the command ends normally', async () => {
    const r = await run('head -c 3000000 /dev/zero | tr "\\0" b');
    expect(r.stdout.length).toBe(3_000_000);
  });

  it('reports death by signal as 128 + n', async () => {
    expect((await run('kill -TERM $$')).exitCode).toBe(143);
  });
});
