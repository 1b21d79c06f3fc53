import { access, mkdir, mkdtemp, readFile, readlink, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { busyboxBin, runOnHost } from './host-shell.js';

const hasBusybox = await access('/usr/bin/busybox').then(
  () => true,
  () => false,
);

let boxDir: string;

beforeEach(async () => {
  boxDir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-host-shell-')));
  await mkdir(path.join(boxDir, 'mnt/user-data/workspace'), { recursive: true });
});

afterEach(async () => {
  await rm(boxDir, { recursive: true, force: true });
});

const mapped = ['/mnt/user-data'];

describe('runOnHost', () => {
  it('runs mapped paths below the box directory and hides that directory in the output', async () => {
    const result = await runOnHost({
      boxDir,
      mapped,
      command: 'sh',
      args: ['-c', 'echo hi > /mnt/user-data/workspace/a.txt && ls /mnt/user-data/workspace/a.txt'],
      env: {},
    });
    expect(result).toEqual({
      exitCode: 0,
      stdout: '/mnt/user-data/workspace/a.txt\n',
      stderr: '',
    });
    expect(await readFile(path.join(boxDir, 'mnt/user-data/workspace/a.txt'), 'utf8')).toBe('hi\n');
  });

  it('maps environment values too, and keeps a clean environment otherwise', async () => {
    const result = await runOnHost({
      boxDir,
      mapped,
      command: 'sh',
      args: ['-c', 'test -d "$TARGET" && echo "$TARGET|$HOME|${SBX_UNSET_FOR_TEST-unset}"'],
      env: { TARGET: '/mnt/user-data/workspace' },
    });
    expect(result.stdout).toBe('/mnt/user-data/workspace||unset\n');
  });

  it('reports a non-zero exit code and stderr', async () => {
    const result = await runOnHost({
      boxDir,
      mapped,
      command: 'sh',
      args: ['-c', 'echo bad >&2; exit 3'],
      env: {},
    });
    expect(result).toEqual({ exitCode: 3, stdout: '', stderr: 'bad\n' });
  });

  it('kills the command when the signal aborts (exit code 137)', async () => {
    const controller = new AbortController();
    const running = runOnHost({
      boxDir,
      mapped,
      command: 'sh',
      args: ['-c', 'sleep 30 & wait'],
      env: {},
      signal: controller.signal,
    });
    controller.abort();
    expect((await running).exitCode).toBe(137);
  });
});

describe.skipIf(!hasBusybox)('busyboxBin', () => {
  it('links the applets once (idempotent) and gives a busybox-only userland', async () => {
    const dir = await busyboxBin(boxDir);
    expect(await busyboxBin(boxDir)).toBe(dir);
    expect(await readlink(path.join(dir, 'cat'))).toBe('/usr/bin/busybox');
    const result = await runOnHost({
      boxDir,
      mapped,
      command: 'sh',
      args: ['-c', 'echo ok | cat; command -v bash || echo "no bash"'],
      env: {},
      busyboxDir: dir,
    });
    expect(result).toEqual({ exitCode: 0, stdout: 'ok\nno bash\n', stderr: '' });
  });
});
