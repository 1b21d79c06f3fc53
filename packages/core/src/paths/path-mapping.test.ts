import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError, SandboxPermissionError, isSbxError } from '../errors/errors.js';
import { PathMappingTable, pathMapping } from './path-mapping.js';
import { isInsideRoot, realpathLenient } from './path-mapping-realpath.js';

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('PathMappingTable', () => {
  let tmp: string;
  let userData: string;
  let workspace: string;
  let skills: string;
  let outside: string;
  let table: PathMappingTable;

  beforeAll(async () => {
    tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-map-')));
    userData = path.join(tmp, 'thread', 'user-data');
    workspace = path.join(userData, 'workspace');
    skills = path.join(tmp, 'skills');
    outside = path.join(tmp, 'outside');
    await mkdir(workspace, { recursive: true });
    await mkdir(path.join(userData, 'outputs'), { recursive: true });
    await mkdir(path.join(skills, 'public', 'demo'), { recursive: true });
    await mkdir(outside, { recursive: true });
    await writeFile(path.join(outside, 'secret.txt'), 'secret');
    await writeFile(path.join(skills, 'public', 'demo', 'SKILL.md'), 'skill');
    await symlink(outside, path.join(workspace, 'escape-dir'));
    await symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'escape-file'));
    await symlink(path.join(outside, 'nope', 'new.txt'), path.join(workspace, 'dangling-out'));
    await symlink(path.join(workspace, 'later.txt'), path.join(workspace, 'dangling-in'));
    await symlink(path.join(skills, 'public'), path.join(workspace, 'into-skills'));
    await symlink('loop-b', path.join(workspace, 'loop-a'));
    await symlink('loop-a', path.join(workspace, 'loop-b'));
    table = new PathMappingTable([
      pathMapping('/mnt/user-data', userData),
      pathMapping('/mnt/user-data/workspace/', workspace),
      pathMapping('/mnt/skills', skills, true),
    ]);
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('§10.4.52 unmapped paths pass through unchanged; the longest container prefix wins', async () => {
    expect(await table.resolve('/etc/hostname')).toEqual({
      hostPath: '/etc/hostname',
      lexicalHostPath: '/etc/hostname',
      mapping: undefined,
    });
    const r = await table.resolve('/mnt/user-data/workspace/a.txt');
    expect(r.mapping?.containerPath).toBe('/mnt/user-data/workspace');
    expect(r.hostPath).toBe(path.join(workspace, 'a.txt'));
    const o = await table.resolve('/mnt/user-data/outputs/x');
    expect(o.mapping?.containerPath).toBe('/mnt/user-data');
  });

  it('normalises a trailing slash on container paths', () => {
    expect(table.match('/mnt/user-data/workspace')?.mapping.hostPath).toBe(workspace);
  });

  it('rejects `..` segments even when they would stay inside', async () => {
    for (const p of [
      '/mnt/user-data/workspace/../../../etc/passwd',
      '/mnt/user-data/workspace/a/../b',
      '/mnt/user-data/workspace/a\\..\\b',
    ]) {
      const err = await rejection(table.resolve(p));
      expect(err).toBeInstanceOf(SandboxPermissionError);
      expect((err as SandboxPermissionError).baseMessage).toBe(
        'Access denied: path traversal detected',
      );
      expect((err as SandboxPermissionError).kind).toBe('EACCES');
    }
  });

  it('rejects NUL bytes with InvalidArgumentError', async () => {
    expect(await rejection(table.resolve('/mnt/user-data/workspace/a\0b'))).toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it('§10.7.84 symlinks that leave the mount are EACCES (directory, file, dangling)', async () => {
    for (const p of [
      '/mnt/user-data/workspace/escape-dir/secret.txt',
      '/mnt/user-data/workspace/escape-file',
      '/mnt/user-data/workspace/dangling-out',
    ]) {
      const err = (await rejection(table.resolve(p))) as SandboxPermissionError;
      expect(err.baseMessage).toBe('Access denied: path escapes mounted directory');
      expect(err.path).toBe(p);
      expect(err.message).not.toContain(tmp);
    }
  });

  it('follows a dangling link that points inside the mount', async () => {
    const r = await table.resolve('/mnt/user-data/workspace/dangling-in', 'write');
    expect(r.hostPath).toBe(path.join(workspace, 'later.txt'));
    expect(r.lexicalHostPath).toBe(path.join(workspace, 'dangling-in'));
  });

  it('refuses symbolic-link loops', async () => {
    const err = (await rejection(
      table.resolve('/mnt/user-data/workspace/loop-a/x'),
    )) as SandboxPermissionError;
    expect(err).toBeInstanceOf(SandboxPermissionError);
    expect(err.path).toBe('/mnt/user-data/workspace/loop-a/x');
  });

  it('§10.7.83 writes to a read-only mount are EROFS; reads are fine', async () => {
    const read = await table.resolve('/mnt/skills/public/demo/SKILL.md', 'read');
    expect(await readFile(read.hostPath, 'utf8')).toBe('skill');
    const err = (await rejection(
      table.resolve('/mnt/skills/public/demo/SKILL.md', 'write'),
    )) as SandboxPermissionError;
    expect(err.kind).toBe('EROFS');
    expect(err.baseMessage).toBe('Read-only file system');
  });

  it('§10.7.85 a link from a writable mount into a nested read-only mount is EROFS', async () => {
    const nested = new PathMappingTable([
      pathMapping('/mnt/data', tmp),
      pathMapping('/mnt/data-ro', skills, true),
    ]);
    // `thread/user-data/workspace/into-skills` → `skills/public`, inside `tmp` and inside `skills`.
    const p = '/mnt/data/thread/user-data/workspace/into-skills/demo/new.txt';
    expect((await nested.resolve(p, 'read')).hostPath).toBe(
      path.join(skills, 'public/demo/new.txt'),
    );
    const err = (await rejection(nested.resolve(p, 'write'))) as SandboxPermissionError;
    expect(err.kind).toBe('EROFS');
  });

  it('§10.7.85 a path through a read-only mount into a nested writable mount is EROFS', async () => {
    const t = new PathMappingTable([
      pathMapping('/mnt/ro', tmp, true),
      pathMapping('/mnt/rw', workspace),
    ]);
    const err = (await rejection(
      t.resolve('/mnt/ro/thread/user-data/workspace/x.txt', 'write'),
    )) as SandboxPermissionError;
    expect(err.kind).toBe('EROFS');
    // ...while the nested writable mount is writable through its own container path.
    expect((await t.resolve('/mnt/rw/x.txt', 'write')).hostPath).toBe(
      path.join(workspace, 'x.txt'),
    );
  });

  it('maps canonical host paths back to container paths (deepest root first)', async () => {
    expect(await table.toContainerPath(path.join(workspace, 'a', 'b.txt'))).toBe(
      '/mnt/user-data/workspace/a/b.txt',
    );
    expect(await table.toContainerPath(workspace)).toBe('/mnt/user-data/workspace');
    expect(await table.toContainerPath(path.join(userData, 'outputs'))).toBe(
      '/mnt/user-data/outputs',
    );
  });

  it('§10.4.50 a prefix-sharing sibling of a mount root stays a host path', async () => {
    const sibling = `${skills}bar/x.txt`;
    expect(await table.toContainerPath(sibling)).toBe(sibling);
    // Under a shorter mount, the sibling is that mount's child, not the deeper mount's.
    expect(await table.toContainerPath(`${workspace}bar/x.txt`)).toBe(
      '/mnt/user-data/workspacebar/x.txt',
    );
  });

  it('realpathLenient resolves the deepest existing ancestor and appends the rest', async () => {
    expect(await realpathLenient(path.join(workspace, 'no', 'such', 'file'))).toBe(
      path.join(workspace, 'no', 'such', 'file'),
    );
    expect(await realpathLenient(path.join(workspace, 'escape-dir', 'new'))).toBe(
      path.join(outside, 'new'),
    );
  });

  it('property: random paths with `..`, links and encodings never resolve outside the mount', async () => {
    const segment = fc.oneof(
      fc.constantFrom(
        '..',
        '.',
        '',
        'escape-dir',
        'escape-file',
        'dangling-out',
        'dangling-in',
        'into-skills',
        'loop-a',
        '%2e%2e',
        '%2E%2E%2F',
        '..%2f',
        '\u2025',
        '\uff0e\uff0e',
        '.\u200b.',
        'a',
        'sub',
        '..\\..',
        '~',
      ),
      fc.stringMatching(/^[a-z.%\\\u00e9]{1,6}$/),
    );
    const roots = await table.resolvedRoots();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/mnt/user-data/workspace', '/mnt/user-data', '/mnt/skills'),
        fc.array(segment, { maxLength: 6 }),
        fc.constantFrom('read', 'write'),
        async (root, segments, access) => {
          const virtual = [root, ...segments].join('/');
          let resolved;
          try {
            resolved = await table.resolve(virtual, access as 'read' | 'write');
          } catch (err) {
            expect(isSbxError(err)).toBe(true);
            return;
          }
          const mapping = resolved.mapping;
          expect(mapping).toBeDefined();
          const mountRoot = roots.get(mapping!)!;
          expect(isInsideRoot(resolved.hostPath, mountRoot)).toBe(true);
          expect(isInsideRoot(resolved.hostPath, outside)).toBe(false);
          // Independent check: the canonical path of what was returned is still inside.
          expect(isInsideRoot(await realpathLenient(resolved.hostPath), mountRoot)).toBe(true);
          if (access === 'write') expect(isInsideRoot(resolved.hostPath, skills)).toBe(false);
        },
      ),
      { numRuns: 400 },
    );
  });
});
