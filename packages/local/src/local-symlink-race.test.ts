import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createToolContext, runTool } from '@sbx/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

/**
 * A hostile agent (with one host-bash call, or a process of its own) swaps a directory of its
 * workspace for a symbolic link to another tenant's directory while its file tools run. A separate
 * process swaps atomically (`rename`) as fast as it can, so every check-then-use window is raced
 * for real; every read, write, append and str_replace must either act inside the attacker's own
 * tree or fail, never touch the victim's files.
 */
const SWAPS = 1_000;

let base: string;
let provider: LocalSandboxProvider;
let swapper: ChildProcess | undefined;

beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-race-'));
  provider = new LocalSandboxProvider({ baseDir: base });
});

afterEach(async () => {
  swapper?.kill('SIGKILL');
  swapper = undefined;
  await provider.shutdown();
  await rm(base, { recursive: true, force: true });
});

function startSwapper(workspace: string, victimDir: string): ChildProcess {
  // `d` alternates between a real directory and a link to the victim's directory.
  const script = `
    const fs = require('node:fs');
    const w = ${JSON.stringify(workspace)};
    fs.symlinkSync(${JSON.stringify(victimDir)}, w + '/d_link');
    for (;;) {
      try { fs.renameSync(w + '/d', w + '/d_dir'); fs.renameSync(w + '/d_link', w + '/d'); } catch {}
      try { fs.renameSync(w + '/d', w + '/d_link'); fs.renameSync(w + '/d_dir', w + '/d'); } catch {}
    }
  `;
  return spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
}

describe('symbolic-link swaps between check and use (race)', () => {
  it(`${SWAPS} reads, writes, appends and edits during swaps: 0 escapes`, async () => {
    const victim = createToolContext({ provider, userId: 'alice', threadId: 'a1' });
    await runTool(
      'write_file',
      { path: '/mnt/user-data/workspace/private/f.txt', content: 'alice-secret\n' },
      victim,
    );
    const victimDir = path.join(base, 'users/alice/threads/a1/user-data/workspace/private');

    const attacker = createToolContext({
      provider,
      userId: 'mallory',
      threadId: 'm1',
      config: { readBeforeWrite: { enabled: false } },
    });
    await runTool('ls', { path: '/mnt/user-data/workspace' }, attacker);
    const workspace = path.join(base, 'users/mallory/threads/m1/user-data/workspace');
    await mkdir(path.join(workspace, 'd'));
    await writeFile(path.join(workspace, 'd/f.txt'), 'mine\n');
    swapper = startSwapper(workspace, victimDir);

    let leaked = 0;
    let succeeded = 0;
    const target = '/mnt/user-data/workspace/d/f.txt';
    for (let i = 0; i < SWAPS; i++) {
      const op = i % 5;
      let out: string;
      if (op === 0) out = await runTool('read_file', { path: target }, attacker);
      else if (op === 1)
        out = await runTool('read_file', { path: target, start_line: 1 }, attacker);
      else if (op === 2)
        out = await runTool('write_file', { path: target, content: 'mine\n' }, attacker);
      else if (op === 3) {
        out = await runTool(
          'write_file',
          { path: '/mnt/user-data/workspace/d/sub/new.txt', content: 'x' },
          attacker,
        );
      } else {
        out = await runTool(
          'str_replace',
          { path: target, old_str: 'alice-secret', new_str: 'owned' },
          attacker,
        );
      }
      if (out.includes('alice-secret')) leaked++;
      if (!out.startsWith('Error')) succeeded++;
    }
    swapper.kill('SIGKILL');
    swapper = undefined;

    expect(leaked).toBe(0);
    expect(await readFile(path.join(victimDir, 'f.txt'), 'utf8')).toBe('alice-secret\n');
    expect((await readdir(victimDir)).sort()).toEqual(['f.txt']);
    // The race really ran both ways: some operations went through on the attacker's own files.
    expect(succeeded).toBeGreaterThan(0);
  }, 120_000);

  it('a thread root replaced by a link to / is refused, also by a fresh provider', async () => {
    const ctx = createToolContext({ provider, userId: 'mallory', threadId: 'm2' });
    await runTool('ls', { path: '/mnt/user-data/workspace' }, ctx);
    const workspace = path.join(base, 'users/mallory/threads/m2/user-data/workspace');
    await rm(workspace, { recursive: true });
    await symlink('/', workspace);
    const read = await runTool('read_file', { path: '/mnt/user-data/workspace/etc/hostname' }, ctx);
    expect(read).toMatch(/^Error: /);

    const restarted = new LocalSandboxProvider({ baseDir: base });
    const again = createToolContext({ provider: restarted, userId: 'mallory', threadId: 'm2' });
    const afterRestart = await runTool(
      'read_file',
      { path: '/mnt/user-data/workspace/etc/hostname' },
      again,
    );
    expect(afterRestart).toMatch(/^Error: /);
    const listing = await runTool('ls', { path: '/mnt/user-data/workspace' }, again);
    expect(listing).not.toMatch(/\/mnt\/user-data\/workspace\/etc/);
    await restarted.shutdown();
  });
});
