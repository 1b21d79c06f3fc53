import { mkdtemp, readdir, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSbxError, silentLogger, type CheckpointConfig } from '@sbx/core';
import { describeLifecycleContract, rejectionOf } from '@sbx/core/testing';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

async function makeProvider(checkpoint?: CheckpointConfig) {
  const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-snapshots-'));
  const provider = new LocalSandboxProvider({
    baseDir,
    isolation: 'none',
    allowHostBash: true,
    logger: silentLogger,
    ...(checkpoint ? { config: { checkpoint } } : {}),
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

  it('sandbox.checkpoint bounds a snapshot: over max_entries it is CHECKPOINT_LIMIT and leaves no archive', async () => {
    const { provider, baseDir, cleanup } = await makeProvider({
      maxTotalBytes: 1024 * 1024,
      maxEntries: 4,
      snapshotTtlSeconds: 0,
    });
    try {
      const id = await provider.acquire({ userId: 'u', threadId: 'big' });
      const ws = provider.threadLayout('u', 'big').workspacePath;
      for (let i = 0; i < 8; i++) await writeFile(path.join(ws, `f${i}.txt`), `${i}`);
      const error = await rejectionOf(provider.snapshot(id));
      expect(isSbxError(error) && error.code).toBe('CHECKPOINT_LIMIT');
      expect(await readdir(path.join(baseDir, 'snapshots'))).toEqual([]);
    } finally {
      await provider.shutdown();
      await cleanup();
    }
  });

  it('a snapshot older than snapshot_ttl_seconds is SNAPSHOT_EXPIRED and restores nothing; the sweep removes it', async () => {
    const { provider, baseDir, cleanup } = await makeProvider({
      maxTotalBytes: 1024 * 1024,
      maxEntries: 100,
      snapshotTtlSeconds: 60,
    });
    try {
      const id = await provider.acquire({ userId: 'u', threadId: 'ttl' });
      const ref = await provider.snapshot(id);
      expect(ref.expiresAt).toBeDefined();
      // The store judges by its own file, never by the reference: age the file.
      const archive = path.join(baseDir, 'snapshots', `${ref.id}.tar.gz`);
      const old = new Date(Date.now() - 120_000);
      await utimes(archive, old, old);
      const error = await rejectionOf(
        provider.acquire({ userId: 'u', threadId: 'ttl-fork', fromSnapshot: ref }),
      );
      expect(isSbxError(error) && error.code).toBe('SNAPSHOT_EXPIRED');
      expect(provider.cachedThreadCount).toBe(1);
      expect(await provider.snapshotStore.sweep()).toEqual([ref.id]);
    } finally {
      await provider.shutdown();
      await cleanup();
    }
  });
});
