import { createReadStream, createWriteStream } from 'node:fs';
import {
  chmod,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSbxError } from '../errors/errors.js';
import { rejectionOf } from '../testing/rejection.js';
import { writeCheckpoint } from './checkpoint-export.js';
import { readCheckpoint } from './checkpoint-import.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sbx-checkpoint-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function thread(name: string) {
  const roots = {
    workspace: path.join(dir, name, 'workspace'),
    uploads: path.join(dir, name, 'uploads'),
    outputs: path.join(dir, name, 'outputs'),
  };
  for (const root of Object.values(roots)) await mkdir(root, { recursive: true });
  return roots;
}

async function exportTo(roots: Record<string, string>, file: string, limits = {}) {
  return writeCheckpoint(roots, createWriteStream(file), { limits });
}

describe('workspace checkpoint round trip', () => {
  it('restores files, directories, empty files and the executable bit, with matching checksums', async () => {
    const src = await thread('src');
    await mkdir(path.join(src.workspace, 'a', 'b', 'empty-dir'), { recursive: true });
    await writeFile(path.join(src.workspace, 'a', 'b', 'data.bin'), Buffer.alloc(300_000, 7));
    await writeFile(path.join(src.workspace, 'empty.txt'), '');
    await writeFile(path.join(src.workspace, 'run.sh'), '#!/bin/sh\necho hi\n');
    await chmod(path.join(src.workspace, 'run.sh'), 0o755);
    await writeFile(path.join(src.uploads, 'report.pdf'), 'pdf');
    await writeFile(path.join(src.outputs, 'out.txt'), 'result\n');
    const archive = path.join(dir, 'c.tar.gz');
    const written = await exportTo(src, archive);
    expect(written.files).toBe(5);
    expect(written.skippedCount).toBe(0);

    const dest = path.join(dir, 'restored');
    const read = await readCheckpoint(createReadStream(archive), dest, {
      expectedArchiveSha256: written.archiveSha256,
    });
    expect(read.treeSha256).toBe(written.treeSha256);
    expect(read.totalBytes).toBe(written.totalBytes);
    expect(await readFile(path.join(dest, 'workspace', 'a', 'b', 'data.bin'))).toEqual(
      Buffer.alloc(300_000, 7),
    );
    expect(await readFile(path.join(dest, 'workspace', 'empty.txt'), 'utf8')).toBe('');
    expect((await stat(path.join(dest, 'workspace', 'run.sh'))).mode & 0o111).not.toBe(0);
    expect((await stat(path.join(dest, 'uploads', 'report.pdf'))).mode & 0o111).toBe(0);
    expect((await stat(path.join(dest, 'workspace', 'a', 'b', 'empty-dir'))).isDirectory()).toBe(
      true,
    );
    expect(await readFile(path.join(dest, 'outputs', 'out.txt'), 'utf8')).toBe('result\n');
    // Nothing else beside the destination: the staging directory was renamed, not left.
    expect((await readdir(dir)).sort()).toEqual(['c.tar.gz', 'restored', 'src']);
  });

  it('attack: a link in the workspace to a host file is left out of the export, never followed', async () => {
    const src = await thread('src');
    const secret = path.join(dir, 'host-secret');
    await writeFile(secret, 'host secret');
    await symlink(secret, path.join(src.workspace, 'innocent.txt'));
    await symlink(dir, path.join(src.workspace, 'innocent-dir'));
    const archive = path.join(dir, 'c.tar.gz');
    const written = await exportTo(src, archive);
    expect(written.files).toBe(0);
    expect(written.skipped.map((s) => s.reason)).toEqual(['link', 'link']);
    const bytes = (await readFile(archive)).toString('latin1');
    expect(bytes).not.toContain('host secret');
  });

  it('an export past its entry or byte limit fails typed', async () => {
    const src = await thread('src');
    for (let i = 0; i < 5; i += 1)
      await writeFile(path.join(src.workspace, `f${i}`), 'x'.repeat(100));
    const entries = await rejectionOf(exportTo(src, path.join(dir, 'a.tar.gz'), { maxEntries: 4 }));
    expect(isSbxError(entries) && entries.code).toBe('CHECKPOINT_LIMIT');
    const bytes = await rejectionOf(
      exportTo(src, path.join(dir, 'b.tar.gz'), { maxTotalBytes: 250 }),
    );
    expect(isSbxError(bytes) && bytes.details).toEqual({ limit: 'totalBytes', bound: 250 });
  });

  it('an import into an existing directory is refused', async () => {
    const src = await thread('src');
    const archive = path.join(dir, 'c.tar.gz');
    await exportTo(src, archive);
    const err = await rejectionOf(readCheckpoint(createReadStream(archive), src.workspace));
    expect(isSbxError(err) && err.code).toBe('INVALID_ARGUMENT');
  });
});
