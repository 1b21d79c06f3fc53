import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import { listDirTree } from './list-dir.js';

let tmp: string;
let n = 0;

async function tree(entries: string[]): Promise<string> {
  const root = path.join(tmp, `t${++n}`);
  await mkdir(root, { recursive: true });
  for (const rel of entries) {
    const full = path.join(root, rel);
    if (rel.endsWith('/')) await mkdir(full, { recursive: true });
    else {
      await mkdir(path.dirname(full), { recursive: true });
      await writeFile(full, 'x');
    }
  }
  return root;
}

beforeAll(async () => {
  tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-ls-')));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('listDirTree', () => {
  it('lists two levels by default, sorted, directories with a trailing /', async () => {
    const root = await tree(['b.txt', 'a/inner.txt', 'a/deep/too-deep.txt', 'a-b/']);
    expect(await listDirTree(root)).toEqual([
      `${root}/a-b/`,
      `${root}/a/`,
      `${root}/a/deep/`,
      `${root}/a/inner.txt`,
      `${root}/b.txt`,
    ]);
  });

  it('honours maxDepth 1 and deeper limits', async () => {
    const root = await tree(['a/b/c/d.txt']);
    expect(await listDirTree(root, { maxDepth: 1 })).toEqual([`${root}/a/`]);
    expect(await listDirTree(root, { maxDepth: 4 })).toEqual([
      `${root}/a/`,
      `${root}/a/b/`,
      `${root}/a/b/c/`,
      `${root}/a/b/c/d.txt`,
    ]);
  });

  it('§10.2.23 an empty directory lists nothing', async () => {
    expect(await listDirTree(await tree([]))).toEqual([]);
  });

  it('a missing or non-directory root gives []', async () => {
    const root = await tree(['f.txt']);
    expect(await listDirTree(path.join(root, 'missing'))).toEqual([]);
    expect(await listDirTree(path.join(root, 'f.txt'))).toEqual([]);
  });

  it('§10.2.25 hides .upload-*.part staging files but shows .upload-note.txt', async () => {
    const root = await tree(['.upload-abc.part', '.upload-note.txt', 'report.pdf']);
    expect(await listDirTree(root)).toEqual([`${root}/.upload-note.txt`, `${root}/report.pdf`]);
  });

  it('skips ignored names and does not descend them', async () => {
    const root = await tree(['node_modules/x/y.js', '.git/HEAD', 'src/a.ts', 'env']);
    expect(await listDirTree(root)).toEqual([`${root}/src/`, `${root}/src/a.ts`]);
  });

  it('§10.2.26 does not follow a symlink that escapes the root', async () => {
    const outside = await tree(['secret.txt']);
    const root = await tree(['mount/ok.txt']);
    await symlink(outside, path.join(root, 'mount/outside'));
    await symlink(path.join(outside, 'secret.txt'), path.join(root, 'mount/secret-link'));
    const listed = await listDirTree(path.join(root, 'mount'));
    expect(listed).toEqual([`${root}/mount/ok.txt`]);
    expect(listed.join('\n')).not.toContain('secret');
  });

  it('§10.2.27 lists an in-root directory symlink under its resolved target path, not the link name', async () => {
    const root = await tree(['mount/nested/linked-dir/f.txt']);
    await symlink(path.join(root, 'mount/nested/linked-dir'), path.join(root, 'mount/dir-link'));
    const listed = await listDirTree(path.join(root, 'mount'), { maxDepth: 1 });
    expect(listed).toEqual([`${root}/mount/nested/`, `${root}/mount/nested/linked-dir/`]);
    expect(listed).not.toContain(`${root}/mount/dir-link`);
    expect(listed).not.toContain(`${root}/mount/dir-link/`);
  });

  it('lists an in-root file symlink under its target and never descends a linked directory', async () => {
    const root = await tree(['real/inner/x.txt', 'file.txt']);
    await symlink(path.join(root, 'file.txt'), path.join(root, 'alias'));
    await symlink(path.join(root, 'real'), path.join(root, 'real-link'));
    expect(await listDirTree(root, { maxDepth: 1 })).toEqual([`${root}/file.txt`, `${root}/real/`]);
  });

  it('§10.2.28 lists each entry exactly once even when a link leads to it again', async () => {
    const root = await tree(['workspace/', 'uploads/', 'outputs/']);
    await symlink(path.join(root, 'workspace'), path.join(root, 'ws-link'));
    expect(await listDirTree(root)).toEqual([
      `${root}/outputs/`,
      `${root}/uploads/`,
      `${root}/workspace/`,
    ]);
  });

  it('skips a dangling symlink', async () => {
    const root = await tree(['a.txt']);
    await symlink(path.join(root, 'gone'), path.join(root, 'dangling'));
    expect(await listDirTree(root)).toEqual([`${root}/a.txt`]);
  });

  it('§10.2.30 shows a file right after it is written', async () => {
    const root = await tree(['workspace/']);
    await writeFile(path.join(root, 'workspace/foo.txt'), 'x');
    expect(await listDirTree(root)).toContain(`${root}/workspace/foo.txt`);
  });

  it('reports paths under the root as named when the root is reached through a link', async () => {
    const real = await tree(['a.txt']);
    const link = path.join(tmp, `link${++n}`);
    await symlink(real, link);
    expect(await listDirTree(link)).toEqual([`${link}/a.txt`]);
  });

  it('rejects a maxDepth below 1', async () => {
    await expect(listDirTree(tmp, { maxDepth: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
