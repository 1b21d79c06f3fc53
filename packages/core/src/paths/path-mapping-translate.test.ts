import { mkdir, mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPermissionError } from '../errors/errors.js';
import { PathMappingTable, pathMapping } from './path-mapping.js';
import { findContainerPaths, translateContainerPaths } from './path-mapping-translate.js';

describe('translateContainerPaths', () => {
  let tmp: string;
  let ws: string;
  let skills: string;
  let table: PathMappingTable;

  beforeAll(async () => {
    tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-translate-')));
    ws = path.join(tmp, 'ws');
    skills = path.join(tmp, 'skills');
    await mkdir(ws, { recursive: true });
    await mkdir(skills, { recursive: true });
    await symlink(os.tmpdir(), path.join(ws, 'out-link'));
    await symlink(path.join(ws, 'target.txt'), path.join(ws, 'in-link'));
    table = new PathMappingTable([
      pathMapping('/mnt/user-data/workspace', ws),
      pathMapping('/mnt/skills', skills, true),
    ]);
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('§10.4.48 resolves a workspace path and leaves /mnt/skills-extra alone', async () => {
    expect(
      await translateContainerPaths(
        'cat /mnt/user-data/workspace/foo.txt /mnt/skills-extra/data',
        table,
        'command',
      ),
    ).toBe(`cat ${ws}/foo.txt /mnt/skills-extra/data`);
  });

  it('handles quotes, redirections, PATH lists and the bare mount root', async () => {
    expect(
      await translateContainerPaths(
        `echo "x" >'/mnt/user-data/workspace/o.txt';cd /mnt/skills&&ls`,
        table,
        'command',
      ),
    ).toBe(`echo "x" >'${ws}/o.txt';cd ${skills}&&ls`);
  });

  it('needs a boundary before the path: /tmp/mnt/skills is not the mount', async () => {
    expect(await translateContainerPaths('ls /tmp/mnt/skills x/mnt/skills', table, 'command')).toBe(
      'ls /tmp/mnt/skills x/mnt/skills',
    );
    expect(await translateContainerPaths('file:///mnt/skills/a', table, 'command')).toBe(
      `file://${skills}/a`,
    );
  });

  it('keeps a trailing slash and link names (rm removes the link, not its target)', async () => {
    expect(
      await translateContainerPaths(
        'rsync /mnt/user-data/workspace/ x; rm /mnt/user-data/workspace/in-link',
        table,
        'command',
      ),
    ).toBe(`rsync ${ws}/ x; rm ${ws}/in-link`);
  });

  it('raises a permission error for paths that escape their mount', async () => {
    await expect(
      translateContainerPaths('cat /mnt/user-data/workspace/out-link/x', table, 'command'),
    ).rejects.toBeInstanceOf(SandboxPermissionError);
    await expect(
      translateContainerPaths('cat /mnt/user-data/workspace/../../etc/passwd', table, 'command'),
    ).rejects.toThrow(/path traversal detected/);
  });

  it('content mode stops at text boundaries such as a comma or colon', async () => {
    expect(
      await translateContainerPaths(
        'see /mnt/skills:/mnt/user-data/workspace/a.md, and /mnt/skillsX',
        table,
        'content',
      ),
    ).toBe(`see ${skills}:${ws}/a.md, and /mnt/skillsX`);
    // The shell-oriented mode does not treat `:` as the end of a root.
    expect(findContainerPaths('/mnt/skills:x', table, 'command')).toEqual([]);
  });

  it('§10.6.82 without mappings, commands and content are unchanged', async () => {
    const empty = new PathMappingTable([]);
    expect(await translateContainerPaths('cat /mnt/user-data/x', empty, 'command')).toBe(
      'cat /mnt/user-data/x',
    );
    expect(await translateContainerPaths('/mnt/skills', empty, 'content')).toBe('/mnt/skills');
  });
});
