import {
  lutimes,
  mkdir,
  mkdtemp,
  readdir,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseSandboxConfig, silentLogger } from '@sbx/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateConfigBlock } from './local-config-block.js';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

const DAY_MS = 86_400_000;

/** Sets every mtime in the tree to `ageDays` ago (links themselves, not their targets). */
async function age(dir: string, ageDays: number): Promise<void> {
  const when = new Date(Date.now() - ageDays * DAY_MS);
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  for (const entry of entries) {
    const full = path.join(entry.parentPath, entry.name);
    await lutimes(full, when, when);
  }
  await utimes(dir, when, when);
}

describe('LocalSandboxProvider.reapOrphans: idle thread directories (sbx gc)', () => {
  let baseDir: string;
  let outside: string;
  beforeEach(async () => {
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-local-gc-'));
    outside = await mkdtemp(path.join(tmpdir(), 'sbx-local-gc-outside-'));
    await writeFile(path.join(outside, 'keep.txt'), 'not the thread’s\n');
  });
  afterEach(async () => {
    await rm(baseDir, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });

  async function thread(provider: LocalSandboxProvider, threadId: string): Promise<string> {
    const id = await provider.acquire({ userId: 'u', threadId });
    await provider.get(id)?.writeFile('/mnt/user-data/workspace/notes.md', 'x\n');
    return path.join(baseDir, 'users', 'u', 'threads', threadId);
  }

  it('removes threads unchanged for longer than the max age, keeps recent and held ones', async () => {
    const setup = new LocalSandboxProvider({ baseDir, logger: silentLogger });
    const oldDir = await thread(setup, 'old');
    const recentDir = await thread(setup, 'recent');
    await thread(setup, 'held');
    // A link out of the thread must survive its thread's removal, and its target too.
    await symlink(outside, path.join(oldDir, 'user-data', 'workspace', 'link'));
    await age(oldDir, 40);
    await age(path.join(baseDir, 'users', 'u', 'threads', 'held'), 40);
    await setup.shutdown();

    const provider = new LocalSandboxProvider({ baseDir, logger: silentLogger });
    await provider.acquire({ userId: 'u', threadId: 'held' });
    const dry = await provider.reapOrphans({ dryRun: true });
    expect(dry.reaped).toEqual(['local:u:old']);
    expect(await stat(oldDir).then(() => true)).toBe(true);
    const kept = Object.fromEntries(dry.kept.map((k) => [k.id, k.reason]));
    expect(kept).toEqual({
      'local:u:held': 'in use by this process',
      'local:u:recent': 'changed within the last 30 days',
    });

    const report = await provider.reapOrphans();
    expect(report.reaped).toEqual(['local:u:old']);
    await expect(stat(oldDir)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await stat(recentDir).then(() => true)).toBe(true);
    expect(await readdir(outside)).toEqual(['keep.txt']);
    await provider.shutdown();
  });

  it('a change deep inside a thread keeps it; the age comes from sandbox.local.thread_max_age_days', async () => {
    const config = parseSandboxConfig({ use: '@sbx/local', local: { thread_max_age_days: 2 } });
    const setup = new LocalSandboxProvider({ baseDir, config, logger: silentLogger });
    const dir = await thread(setup, 't');
    await age(dir, 3);
    await setup.shutdown();
    const deep = path.join(dir, 'user-data', 'workspace', 'a', 'b');
    await mkdir(deep, { recursive: true });
    await writeFile(path.join(deep, 'fresh.txt'), 'now\n');
    const provider = new LocalSandboxProvider({ baseDir, config, logger: silentLogger });
    expect((await provider.reapOrphans({ dryRun: true })).kept).toEqual([
      { id: 'local:u:t', reason: 'changed within the last 2 days' },
    ]);
    await age(dir, 3);
    expect((await provider.reapOrphans({ dryRun: true })).reaped).toEqual(['local:u:t']);
    await provider.shutdown();
  });

  it('an empty data directory has nothing to collect', async () => {
    const provider = new LocalSandboxProvider({ baseDir, logger: silentLogger });
    expect(await provider.reapOrphans()).toEqual({ reaped: [], kept: [] });
  });
});

describe('validateConfigBlock (sandbox.local)', () => {
  it('reports unknown keys with did-you-mean and bad values at their key paths', () => {
    const config = parseSandboxConfig({
      use: '@sbx/local',
      local: { max_cached_thread: 3, shell: '', thread_max_age_days: -1, nonsense: 1 },
    });
    expect(validateConfigBlock(config)).toEqual([
      {
        path: 'sandbox.local.max_cached_thread',
        message: 'unknown key (did you mean "max_cached_threads"?)',
      },
      {
        path: 'sandbox.local.nonsense',
        message:
          'unknown key (known: shell, max_cached_threads, thread_max_age_days, isolation, sandbox_uid, sandbox_gid, limits)',
      },
      { path: 'sandbox.local.shell', message: 'must be a non-empty string' },
      { path: 'sandbox.local.thread_max_age_days', message: 'must be a positive number, got -1' },
    ]);
    expect(validateConfigBlock(parseSandboxConfig({ local: { max_cached_threads: 5 } }))).toEqual(
      [],
    );
  });
});
