import { mkdtemp, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSbxError, silentLogger } from '@sbx/core';
import { describeLifecycleContract, rejectionOf } from '@sbx/core/testing';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

async function makeProvider() {
  const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-snapshots-'));
  const provider = new LocalSandboxProvider({
    baseDir,
    isolation: 'none',
    allowHostBash: true,
    logger: silentLogger,
  });
  return { provider, baseDir, cleanup: () => rm(baseDir, { recursive: true, force: true }) };
}

describeLifecycleContract('LocalSandboxProvider', makeProvider);

describe('local snapshots', () => {
  it('a snapshot is an archive in <base>/snapshots keyed by a random id; pause and resume are refused, saying why', async () => {
    const { provider, baseDir, cleanup } = await makeProvider();
    try {
      const id = await provider.acquire({ userId: 'u', threadId: 't' });
      const ref = await provider.snapshot(id);
      expect(ref.provider).toBe('local');
      expect(ref.id).toMatch(/^snap-[0-9a-f]{32}$/);
      expect(await readdir(path.join(baseDir, 'snapshots'))).toEqual([`${ref.id}.tar.gz`]);
      const paused = await rejectionOf(provider.pause(id));
      expect(isSbxError(paused) && paused.code).toBe('CAPABILITY_NOT_SUPPORTED');
      expect(String(paused)).toContain('freezer');
    } finally {
      await provider.shutdown();
      await cleanup();
    }
  });

  it('attack: a link in the source workspace to a host file does not reach the fork', async () => {
    const { provider, baseDir, cleanup } = await makeProvider();
    try {
      const id = await provider.acquire({ userId: 'u', threadId: 'src' });
      const secret = path.join(baseDir, 'host-secret.txt');
      await writeFile(secret, 'host secret');
      const layout = provider.threadLayout('u', 'src');
      await symlink(secret, path.join(layout.workspacePath, 'secret.txt'));
      const ref = await provider.snapshot(id);
      const fork = await provider.acquire({ userId: 'u', threadId: 'fork', fromSnapshot: ref });
      const read = await rejectionOf(
        provider.get(fork)!.readFile('/mnt/user-data/workspace/secret.txt'),
      );
      expect(isSbxError(read)).toBe(true);
    } finally {
      await provider.shutdown();
      await cleanup();
    }
  });

  it('a thread that already has data is not restored over', async () => {
    const { provider, cleanup } = await makeProvider();
    try {
      const src = await provider.acquire({ userId: 'u', threadId: 'src' });
      const ref = await provider.snapshot(src);
      const live = await rejectionOf(
        provider.acquire({ userId: 'u', threadId: 'src', fromSnapshot: ref }),
      );
      expect(isSbxError(live) && live.code).toBe('INVALID_ARGUMENT');
      await provider.acquire({ userId: 'u', threadId: 'other' });
      await provider.shutdown();
      const again = new LocalSandboxProvider({
        baseDir: provider.baseDir,
        isolation: 'none',
        allowHostBash: true,
        logger: silentLogger,
      });
      const onDisk = await rejectionOf(
        again.acquire({ userId: 'u', threadId: 'other', fromSnapshot: ref }),
      );
      expect(isSbxError(onDisk) && onDisk.code).toBe('INVALID_ARGUMENT');
      await again.shutdown();
    } finally {
      await cleanup();
    }
  });

  it('attack: a snapshot id naming an archive outside the snapshot area is refused, though the archive is valid', async () => {
    const { provider, baseDir, cleanup } = await makeProvider();
    try {
      const src = await provider.acquire({ userId: 'u', threadId: 'src' });
      const ref = await provider.snapshot(src);
      const planted = path.join(baseDir, 'planted');
      await rename(path.join(baseDir, 'snapshots', `${ref.id}.tar.gz`), `${planted}.tar.gz`);
      const forged = { ...ref, id: ['..', 'planted'].join('/') };
      const err = await rejectionOf(
        provider.acquire({ userId: 'u', threadId: 'forged', fromSnapshot: forged }),
      );
      expect(isSbxError(err) && err.code).toBe('INVALID_ARGUMENT');
    } finally {
      await provider.shutdown();
      await cleanup();
    }
  });

  it('a well-formed id of no snapshot is SNAPSHOT_NOT_FOUND', async () => {
    const { provider, cleanup } = await makeProvider();
    try {
      const ref = { provider: 'local', id: `snap-${'0'.repeat(32)}`, createdAt: '' };
      const err = await rejectionOf(
        provider.acquire({ userId: 'u', threadId: 'n', fromSnapshot: ref }),
      );
      expect(isSbxError(err) && err.code).toBe('SNAPSHOT_NOT_FOUND');
    } finally {
      await provider.shutdown();
      await cleanup();
    }
  });
});
