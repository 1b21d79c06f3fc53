import { describe, expect, it } from 'vitest';
import type { ThreadDataPaths } from './virtual-paths.js';
import {
  replaceVirtualPath,
  replaceVirtualPathsInCommand,
  threadVirtualToHostMappings,
} from './virtual-paths-thread.js';

const TD: ThreadDataPaths = {
  workspacePath: '/data/t1/user-data/workspace',
  uploadsPath: '/data/t1/user-data/uploads',
  outputsPath: '/data/t1/user-data/outputs',
};
const WIN: ThreadDataPaths = {
  workspacePath: 'C:\\Users\\admin\\.sbx\\t1\\user-data\\workspace',
  uploadsPath: 'C:\\Users\\admin\\.sbx\\t1\\user-data\\uploads',
  outputsPath: 'C:\\Users\\admin\\.sbx\\t1\\user-data\\outputs',
};

describe('replaceVirtualPath', () => {
  it('§10.4.35 maps a workspace file and the bare /mnt/user-data root to host paths', () => {
    expect(replaceVirtualPath('/mnt/user-data/workspace/a.txt', TD)).toBe(
      '/data/t1/user-data/workspace/a.txt',
    );
    expect(replaceVirtualPath('/mnt/user-data', TD)).toBe('/data/t1/user-data');
    expect(replaceVirtualPath('/mnt/user-data/other/x', TD)).toBe('/data/t1/user-data/other/x');
  });

  it('§10.4.36 keeps a trailing slash in the base separator style, never mixed', () => {
    expect(replaceVirtualPath('/mnt/user-data/outputs/', TD)).toBe('/data/t1/user-data/outputs/');
    expect(replaceVirtualPath('/mnt/user-data/outputs/sub/', WIN)).toBe(
      'C:\\Users\\admin\\.sbx\\t1\\user-data\\outputs\\sub\\',
    );
    expect(replaceVirtualPath('/mnt/user-data/workspace/a/b.txt', WIN)).toBe(
      'C:\\Users\\admin\\.sbx\\t1\\user-data\\workspace\\a\\b.txt',
    );
  });

  it('leaves other paths, prefix siblings and missing thread data alone', () => {
    expect(replaceVirtualPath('/mnt/skills/public/x', TD)).toBe('/mnt/skills/public/x');
    expect(replaceVirtualPath('/mnt/user-data-backup/x', TD)).toBe('/mnt/user-data-backup/x');
    expect(replaceVirtualPath('/mnt/user-data/workspace/a', null)).toBe(
      '/mnt/user-data/workspace/a',
    );
  });

  it('omits the bare root when the present directories do not share one parent', () => {
    const mappings = threadVirtualToHostMappings({
      workspacePath: '/a/workspace',
      outputsPath: '/b/outputs',
    });
    expect(mappings.map((m) => m.virtualPath)).toEqual([
      '/mnt/user-data/workspace',
      '/mnt/user-data/outputs',
    ]);
  });
});

describe('replaceVirtualPathsInCommand', () => {
  it('§10.4.37 keeps trailing slashes of translated user-data paths', () => {
    expect(replaceVirtualPathsInCommand('cp -r /mnt/user-data/uploads/ dst', TD)).toBe(
      'cp -r /data/t1/user-data/uploads/ dst',
    );
  });

  it('§10.4.38 translates user-data paths and leaves skills and ACP paths virtual', () => {
    expect(
      replaceVirtualPathsInCommand(
        'cat /mnt/skills/public/x/SKILL.md /mnt/acp-workspace/a > /mnt/user-data/outputs/o.txt',
        TD,
      ),
    ).toBe(
      'cat /mnt/skills/public/x/SKILL.md /mnt/acp-workspace/a > /data/t1/user-data/outputs/o.txt',
    );
  });

  it('§10.4.39 does not rewrite prefix siblings of /mnt/user-data', () => {
    for (const sibling of [
      '/mnt/user-data-backup',
      '/mnt/user-data2',
      '/mnt/user-data.bak',
      '/mnt/user-data_old',
    ]) {
      expect(replaceVirtualPathsInCommand(`ls ${sibling}/x`, TD)).toBe(`ls ${sibling}/x`);
    }
  });

  it('§10.4.40 translates the bare root at the end, before &&, before :/opt and before , done', () => {
    expect(replaceVirtualPathsInCommand('ls /mnt/user-data', TD)).toBe('ls /data/t1/user-data');
    expect(replaceVirtualPathsInCommand('cd /mnt/user-data && ls', TD)).toBe(
      'cd /data/t1/user-data && ls',
    );
    expect(replaceVirtualPathsInCommand('PATH=/mnt/user-data:/opt/bin', TD)).toBe(
      'PATH=/data/t1/user-data:/opt/bin',
    );
    expect(replaceVirtualPathsInCommand('echo /mnt/user-data, done', TD)).toBe(
      'echo /data/t1/user-data, done',
    );
  });

  it('§10.4.41 translated commands for Windows host dirs contain no backslashes', () => {
    const out = replaceVirtualPathsInCommand('type /mnt/user-data/workspace/a.txt', WIN);
    expect(out).toBe('type C:/Users/admin/.sbx/t1/user-data/workspace/a.txt');
    expect(out).not.toContain('\\');
  });
});
