import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isSbxError } from '../errors/errors.js';
import { threadLayout } from '../paths/virtual-paths-layout.js';
import { ManualClock } from '../testing/manual-clock.js';
import { rejectionOf } from '../testing/rejection.js';
import { SnapshotArchiveStore } from './snapshot-archive-store.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const codeOf = (error: unknown) => (isSbxError(error) ? error.code : undefined);

async function setup(ttlSeconds: number, limits?: { maxEntries?: number }) {
  const base = await mkdtemp(path.join(tmpdir(), 'sbx-snapstore-'));
  dirs.push(base);
  const clock = new ManualClock(1_700_000_000_000);
  const store = new SnapshotArchiveStore({
    dir: path.join(base, 'snapshots'),
    provider: 'test',
    ttlSeconds,
    clock,
    ...(limits ? { limits } : {}),
  });
  const source = threadLayout(base, 'u1', 'src');
  for (const dir of [source.workspacePath, source.uploadsPath, source.outputsPath]) {
    await mkdir(dir, { recursive: true });
  }
  await writeFile(path.join(source.workspacePath, 'a.txt'), 'a\n');
  return { base, clock, store, source };
}

describe('SnapshotArchiveStore expiry', () => {
  it('a snapshot restores until its life ends, then is SNAPSHOT_EXPIRED, and the sweep removes it', async () => {
    const { base, clock, store, source } = await setup(60);
    const ref = await store.create(source);
    expect(ref.expiresAt).toBe(new Date(clock.now() + 60_000).toISOString());
    clock.advance(59_000);
    await store.restore(ref, threadLayout(base, 'u1', 'early'));
    clock.advance(1_000);
    const refused = await rejectionOf(store.restore(ref, threadLayout(base, 'u1', 'late')));
    expect(codeOf(refused)).toBe('SNAPSHOT_EXPIRED');
    expect(codeOf(await rejectionOf(store.check(ref)))).toBe('SNAPSHOT_EXPIRED');
    // Refused before anything was written.
    expect(await readdir(path.join(base, 'users', 'u1', 'threads'))).not.toContain('late');
    expect(await store.sweep()).toEqual([ref.id]);
    expect(codeOf(await rejectionOf(store.check(ref)))).toBe('SNAPSHOT_NOT_FOUND');
  });

  it("a reference's own expiresAt is not believed: a forged later one restores nothing", async () => {
    const { base, clock, store, source } = await setup(60);
    const ref = await store.create(source);
    clock.advance(120_000);
    const forged = { ...ref, expiresAt: new Date(clock.now() + 3_600_000).toISOString() };
    expect(codeOf(await rejectionOf(store.restore(forged, threadLayout(base, 'u1', 'f'))))).toBe(
      'SNAPSHOT_EXPIRED',
    );
  });

  it('without a ttl nothing expires and the sweep removes nothing', async () => {
    const { base, clock, store, source } = await setup(0);
    const ref = await store.create(source);
    expect(ref.expiresAt).toBeUndefined();
    clock.advance(10 * 365 * 24 * 3600 * 1000);
    expect(await store.sweep()).toEqual([]);
    await store.restore(ref, threadLayout(base, 'u1', 'later'));
  });

  it('the sweep leaves what is not an archive of the store alone, and removes a stale partial export', async () => {
    const { clock, store, source } = await setup(60);
    const live = await store.create(source);
    await writeFile(path.join(store.dir, 'notes.txt'), 'keep\n');
    const partial = `${store.archivePath(`snap-${'b'.repeat(32)}`)}.partial`;
    await writeFile(partial, 'half');
    const { utimes } = await import('node:fs/promises');
    const old = new Date(clock.now() - 120_000);
    await utimes(partial, old, old);
    expect(await store.sweep()).toEqual([]);
    const left = await readdir(store.dir);
    expect(left).toContain('notes.txt');
    expect(left).toContain(`${live.id}.tar.gz`);
    expect(left.some((n) => n.endsWith('.partial'))).toBe(false);
  });

  it('a snapshot over the configured limits fails with CHECKPOINT_LIMIT and leaves no archive', async () => {
    const { store, source } = await setup(0, { maxEntries: 2 });
    for (const name of ['b', 'c', 'd']) {
      await writeFile(path.join(source.workspacePath, `${name}.txt`), name);
    }
    expect(codeOf(await rejectionOf(store.create(source)))).toBe('CHECKPOINT_LIMIT');
    expect(await readdir(store.dir)).toEqual([]);
  });
});
