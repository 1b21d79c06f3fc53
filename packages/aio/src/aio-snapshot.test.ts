import { lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isSbxError, threadLayout } from '@sbx/core';
import type { SnapshotRef } from '@sbx/core';
import { rejectionOf } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';
import type { Harness } from './testing/provider-harness.js';

// Snapshots on the AIO provider over the in-memory backend. A local container bind-mounts the
// thread's user-data directories from the host, which is what a snapshot reads and a restore
// writes; the stand-in keeps its files in memory, so these tests write the host directories
// themselves, as the bind mount would. Through a real container: the lifecycle contract in aio-pause.int.test.ts.

const { harness } = harnessContext();

const codeOf = (error: unknown) => (isSbxError(error) ? error.code : undefined);
const layoutOf = (h: Harness, threadId: string) => threadLayout(h.baseDir, 'u1', threadId);

async function exists(p: string): Promise<boolean> {
  return lstat(p).then(
    () => true,
    () => false,
  );
}

describe('AIO snapshot', () => {
  it('declares snapshot where the thread data is on this host, and refuses it (typed) where not', async () => {
    const h = await harness();
    expect(h.provider.lifecycleSupport.snapshot).toBe(true);
    const remote = await harness({ config: { thread_data_mounts: false } });
    expect(remote.provider.lifecycleSupport.snapshot).toBe(false);
    const id = await remote.provider.acquire(T('r'));
    expect(codeOf(await rejectionOf(remote.provider.snapshot(id)))).toBe(
      'CAPABILITY_NOT_SUPPORTED',
    );
  });

  it('a fork restores the thread data before its container is created, and diverges', async () => {
    const h = await harness();
    const src = await h.provider.acquire(T('src'));
    const srcLayout = layoutOf(h, 'src');
    await writeFile(path.join(srcLayout.workspacePath, 'a.md'), 'at snapshot\n');
    const ref = await h.provider.snapshot(src);
    expect(ref).toMatchObject({
      provider: 'aio',
      id: expect.stringMatching(/^snap-[0-9a-f]{32}$/),
    });
    await writeFile(path.join(srcLayout.workspacePath, 'a.md'), 'moved on\n');

    const creates = h.backend.count('create');
    const fork = await h.provider.acquire({ ...T('fork'), fromSnapshot: ref });
    expect(fork).not.toBe(src);
    expect(h.backend.count('create')).toBe(creates + 1);
    const forkLayout = layoutOf(h, 'fork');
    expect(await readFile(path.join(forkLayout.workspacePath, 'a.md'), 'utf8')).toBe(
      'at snapshot\n',
    );
    expect(await readFile(path.join(srcLayout.workspacePath, 'a.md'), 'utf8')).toBe('moved on\n');
  });

  it('a link the sandbox planted in its workspace is left out of the snapshot', async () => {
    const h = await harness();
    const src = await h.provider.acquire(T('links'));
    const ws = layoutOf(h, 'links').workspacePath;
    // Built at run time: a link out of the workspace to a host file.
    await symlink(['', 'etc', 'passwd'].join('/'), path.join(ws, 'escape'));
    await writeFile(path.join(ws, 'ok.txt'), 'ok\n');
    const ref = await h.provider.snapshot(src);
    await h.provider.acquire({ ...T('links-fork'), fromSnapshot: ref });
    const forkWs = layoutOf(h, 'links-fork').workspacePath;
    expect(await readFile(path.join(forkWs, 'ok.txt'), 'utf8')).toBe('ok\n');
    expect(await exists(path.join(forkWs, 'escape'))).toBe(false);
  });

  it('fromSnapshot into a thread that already has a sandbox is INVALID_ARGUMENT; nothing restored', async () => {
    const h = await harness();
    const src = await h.provider.acquire(T('s2'));
    const ref = await h.provider.snapshot(src);
    const busy = await h.provider.acquire(T('has-one'));
    const refused = await rejectionOf(h.provider.acquire({ ...T('has-one'), fromSnapshot: ref }));
    expect(codeOf(refused)).toBe('INVALID_ARGUMENT');
    expect(h.provider.get(busy)).toBeDefined();
  });

  it('fromSnapshot into a thread with data on disk is INVALID_ARGUMENT', async () => {
    const h = await harness();
    const src = await h.provider.acquire(T('s3'));
    const ref = await h.provider.snapshot(src);
    await mkdir(layoutOf(h, 'old').workspacePath, { recursive: true });
    await writeFile(path.join(layoutOf(h, 'old').workspacePath, 'mine.txt'), 'mine\n');
    const creates = h.backend.count('create');
    expect(codeOf(await rejectionOf(h.provider.acquire({ ...T('old'), fromSnapshot: ref })))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(h.backend.count('create')).toBe(creates);
    expect(await readFile(path.join(layoutOf(h, 'old').workspacePath, 'mine.txt'), 'utf8')).toBe(
      'mine\n',
    );
  });

  it('forged references are refused before anything is created: another kind, a path, an unknown id', async () => {
    const h = await harness();
    const at = new Date(0).toISOString();
    const forged: [SnapshotRef, string][] = [
      [{ provider: 'local', id: `snap-${'a'.repeat(32)}`, createdAt: at }, 'INVALID_ARGUMENT'],
      [{ provider: 'aio', id: ['..', '..', 'etc'].join('/'), createdAt: at }, 'INVALID_ARGUMENT'],
      [{ provider: 'aio', id: `snap-${'0'.repeat(32)}`, createdAt: at }, 'SNAPSHOT_NOT_FOUND'],
    ];
    for (const [ref, code] of forged) {
      const creates = h.backend.count('create');
      expect(
        codeOf(await rejectionOf(h.provider.acquire({ ...T('forged'), fromSnapshot: ref }))),
      ).toBe(code);
      expect(h.backend.count('create')).toBe(creates);
      expect(await exists(layoutOf(h, 'forged').userDataPath)).toBe(false);
    }
  });

  it('a snapshot of a sandbox this instance does not hold is SANDBOX_NOT_FOUND; of an anonymous one INVALID_ARGUMENT', async () => {
    const h = await harness();
    expect(codeOf(await rejectionOf(h.provider.snapshot('0123456789abcdef')))).toBe(
      'SANDBOX_NOT_FOUND',
    );
    const anonymous = await h.provider.acquire();
    expect(codeOf(await rejectionOf(h.provider.snapshot(anonymous)))).toBe('INVALID_ARGUMENT');
  });
});

describe('AIO snapshot under sandbox.checkpoint', () => {
  it('a snapshot over max_entries fails with CHECKPOINT_LIMIT and leaves no archive', async () => {
    const h = await harness({ config: { checkpoint: { max_entries: 4 } } });
    const id = await h.provider.acquire(T('big'));
    const ws = layoutOf(h, 'big').workspacePath;
    for (let i = 0; i < 8; i++) await writeFile(path.join(ws, `f${i}.txt`), `${i}`);
    expect(codeOf(await rejectionOf(h.provider.snapshot(id)))).toBe('CHECKPOINT_LIMIT');
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(h.provider.snapshotStore.dir)).toEqual([]);
  });

  it('a snapshot past snapshot_ttl_seconds is SNAPSHOT_EXPIRED and creates nothing; the sweep removes it', async () => {
    const h = await harness({ config: { checkpoint: { snapshot_ttl_seconds: 60 } } });
    const src = await h.provider.acquire(T('ttl'));
    const ref = await h.provider.snapshot(src);
    expect(ref.expiresAt).toBeDefined();
    h.clock.advance(61_000);
    const creates = h.backend.count('create');
    expect(
      codeOf(await rejectionOf(h.provider.acquire({ ...T('ttl-fork'), fromSnapshot: ref }))),
    ).toBe('SNAPSHOT_EXPIRED');
    expect(h.backend.count('create')).toBe(creates);
    expect(await h.provider.snapshotStore.sweep()).toEqual([ref.id]);
  });
});
