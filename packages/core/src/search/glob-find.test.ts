import fc from 'fast-check';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AbortedError,
  InvalidArgumentError,
  SandboxFileError,
  SandboxFileNotFoundError,
} from '../errors/errors.js';
import { findGlobMatches } from './glob-find.js';
import { pathMatchesGlob } from './glob-match.js';
import { shouldIgnorePath } from './search-ignore.js';
import { compareRelativePaths } from './search-order.js';

let tmp: string;
let n = 0;

async function tree(files: Record<string, string>): Promise<string> {
  const root = path.join(tmp, `t${++n}`);
  await mkdir(root, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    const full = path.join(root, rel);
    if (rel.endsWith('/')) {
      await mkdir(full, { recursive: true });
      continue;
    }
    await mkdir(path.dirname(full), { recursive: true });
    await writeFile(full, content);
  }
  return root;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-glob-')));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('findGlobMatches', () => {
  it('§10.1.1 "**/*.py" returns files at depth 0 and 1 as absolute paths under the root', async () => {
    const root = await tree({ 'app.py': '', 'pkg/util.py': '', 'pkg/readme.md': '' });
    expect(await findGlobMatches(root, '**/*.py')).toEqual({
      paths: [path.join(root, 'app.py'), path.join(root, 'pkg/util.py')],
      truncated: false,
    });
  });

  it('§10.1.2 never returns anything inside node_modules, with or without includeDirs', async () => {
    const root = await tree({
      'node_modules/lib/index.js': '',
      'node_modules/x.py': '',
      'src/index.js': '',
    });
    const files = await findGlobMatches(root, '**/*');
    expect(files.paths).toEqual([path.join(root, 'src/index.js')]);
    const withDirs = await findGlobMatches(root, '*', { includeDirs: true });
    expect(withDirs.paths).toEqual([path.join(root, 'src'), path.join(root, 'src/index.js')]);
  });

  it('§10.1.3 "**/SKILL.md" finds a nested skill file', async () => {
    const root = await tree({ 'public/demo/SKILL.md': '', 'public/demo/other.md': '' });
    expect((await findGlobMatches(root, '**/SKILL.md')).paths).toEqual([
      path.join(root, 'public/demo/SKILL.md'),
    ]);
  });

  it('§10.1.11 caps results and reports truncation when more paths match', async () => {
    const root = await tree({ 'a.txt': '', 'b.txt': '', 'c.txt': '' });
    expect(await findGlobMatches(root, '*.txt', { maxResults: 2 })).toEqual({
      paths: [path.join(root, 'a.txt'), path.join(root, 'b.txt')],
      truncated: true,
    });
  });

  it('§10.1.20 (strict by choice) exactly maxResults matches is not truncated', async () => {
    const root = await tree({ 'a.txt': '', 'b.txt': '', 'c.txt': '' });
    expect((await findGlobMatches(root, '*.txt', { maxResults: 3 })).truncated).toBe(false);
    expect((await findGlobMatches(root, '*.txt', { maxResults: 10 })).truncated).toBe(false);
  });

  it('§10.1.12 a file root raises a not-a-directory error', async () => {
    const root = await tree({ 'f.txt': '' });
    const err = await rejection(findGlobMatches(path.join(root, 'f.txt'), '*'));
    expect(err).toBeInstanceOf(SandboxFileError);
    expect((err as SandboxFileError).kind).toBe('ENOTDIR');
  });

  it('a missing root raises SandboxFileNotFoundError naming the display path', async () => {
    const err = await rejection(
      findGlobMatches(path.join(tmp, 'missing'), '*', { displayPath: '/mnt/user-data/x' }),
    );
    expect(err).toBeInstanceOf(SandboxFileNotFoundError);
    expect((err as SandboxFileNotFoundError).baseMessage).toBe(
      'No such file or directory: /mnt/user-data/x',
    );
    expect((err as Error).message).not.toContain(tmp);
  });

  it('checks the pattern and limits before touching the disk', async () => {
    await expect(findGlobMatches(path.join(tmp, 'missing'), '')).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(
      findGlobMatches(path.join(tmp, 'missing'), '*', { maxResults: 0 }),
    ).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('matches a slash-less pattern against names at any depth and a slashed one from the root', async () => {
    const root = await tree({ 'a.txt': '', 'sub/b.txt': '', 'x/sub/c.txt': '' });
    expect((await findGlobMatches(root, '*.txt')).paths).toHaveLength(3);
    expect((await findGlobMatches(root, 'sub/*.txt')).paths).toEqual([
      path.join(root, 'sub/b.txt'),
    ]);
  });

  it('reports directories only with includeDirs', async () => {
    const root = await tree({ 'pkg/x.txt': '' });
    expect((await findGlobMatches(root, 'pkg')).paths).toEqual([]);
    expect((await findGlobMatches(root, 'pkg', { includeDirs: true })).paths).toEqual([
      path.join(root, 'pkg'),
    ]);
  });

  it('neither reports nor follows symbolic links', async () => {
    const outside = await tree({ 'secret.py': '' });
    const root = await tree({ 'real.py': '' });
    await symlink(outside, path.join(root, 'out-link'));
    await symlink(path.join(root, 'real.py'), path.join(root, 'alias.py'));
    expect((await findGlobMatches(root, '**/*.py', { includeDirs: true })).paths).toEqual([
      path.join(root, 'real.py'),
    ]);
  });

  it('reports paths under the root as named, even when the root is a symbolic link', async () => {
    const real = await tree({ 'a.py': '' });
    const link = path.join(tmp, `link${++n}`);
    await symlink(real, link);
    expect((await findGlobMatches(link, '*.py')).paths).toEqual([path.join(link, 'a.py')]);
  });

  it('stops with AbortedError when the signal fires', async () => {
    const root = await tree({ 'a/b/c.txt': '' });
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(findGlobMatches(root, '*', { signal: controller.signal })).rejects.toBeInstanceOf(
      AbortedError,
    );
  });

  it('property: matches a model of the tree (order, ignore list, truncation)', async () => {
    const segment = fc.constantFrom(
      'a',
      'b.py',
      'c.txt',
      'node_modules',
      '.git',
      'x.log',
      'env',
      'Z',
    );
    const files = fc.uniqueArray(
      fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join('/')),
      { maxLength: 8 },
    );
    await fc.assert(
      fc.asyncProperty(
        files,
        fc.constantFrom('*', '*.py', '**/*.txt', 'a/*', 'b.py'),
        fc.integer({ min: 1, max: 5 }),
        fc.boolean(),
        async (relFiles, pattern, maxResults, includeDirs) => {
          // A path cannot be both a file and a directory: keep files that are no other's prefix.
          const usable = relFiles.filter((f) => !relFiles.some((g) => g.startsWith(`${f}/`)));
          const root = await tree(Object.fromEntries(usable.map((f) => [f, 'x'])));
          const entries = new Set<string>();
          for (const f of usable) {
            const parts = f.split('/');
            for (let i = 1; i <= parts.length; i++) {
              const rel = parts.slice(0, i).join('/');
              if (i < parts.length && !includeDirs) continue;
              entries.add(rel);
            }
          }
          const expected = [...entries]
            .filter((rel) => !shouldIgnorePath(rel) && pathMatchesGlob(pattern, rel))
            .sort(compareRelativePaths);
          const got = await findGlobMatches(root, pattern, { maxResults, includeDirs });
          expect(got.paths.every((p) => !shouldIgnorePath(path.relative(root, p)))).toBe(true);
          expect(got.paths).toEqual(expected.slice(0, maxResults).map((r) => path.join(root, r)));
          expect(got.truncated).toBe(expected.length > maxResults);
        },
      ),
      { numRuns: 40 },
    );
  });
});
