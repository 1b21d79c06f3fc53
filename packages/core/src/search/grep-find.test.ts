import { execFile } from 'node:child_process';
import fc from 'fast-check';
import { chmod, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AbortedError,
  InvalidArgumentError,
  SandboxFileError,
  SandboxFileNotFoundError,
} from '../errors/errors.js';
import { findGrepMatches } from './grep-find.js';
import type { Logger } from '../logging/logger.js';
import { shouldIgnorePath } from './search-ignore.js';
import { compareRelativePaths } from './search-order.js';

let tmp: string;
let n = 0;

async function tree(files: Record<string, string | Buffer>): Promise<string> {
  const root = path.join(tmp, `t${++n}`);
  await mkdir(root, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    const full = path.join(root, rel);
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
  tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-grep-')));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('findGrepMatches', () => {
  it('§10.1.4 a glob of "**/*.py" searches only .py files', async () => {
    const root = await tree({ 'a.py': 'hit\n', 'b.txt': 'hit\n', 'pkg/c.py': 'hit\n' });
    const { matches } = await findGrepMatches(root, 'hit', { glob: '**/*.py' });
    expect(matches.map((m) => path.relative(root, m.path))).toEqual(['a.py', 'pkg/c.py']);
  });

  it('§10.1.5 skips a file with a NUL byte in its first bytes even if it contains the pattern', async () => {
    const root = await tree({
      'bin.dat': Buffer.concat([Buffer.from('needle\0'), Buffer.from('\nneedle\n')]),
      'text.txt': 'needle\n',
    });
    const { matches } = await findGrepMatches(root, 'needle');
    expect(matches.map((m) => path.basename(m.path))).toEqual(['text.txt']);
  });

  it('reads a file whose only NUL lies past the first 8 KiB as text', async () => {
    const root = await tree({
      'late.txt': Buffer.concat([Buffer.from(`needle\n${'x'.repeat(9000)}\n`), Buffer.from([0])]),
    });
    expect((await findGrepMatches(root, 'needle')).matches).toHaveLength(1);
  });

  it('§10.1.6 accepts a single file path and reports its first line', async () => {
    const root = await tree({ 'notes.txt': 'TODO here\nother\n' });
    const file = path.join(root, 'notes.txt');
    expect(await findGrepMatches(file, 'todo')).toEqual({
      matches: [{ path: file, lineNumber: 1, line: 'TODO here' }],
      truncated: false,
    });
  });

  it('§10.1.13 a single file yields GrepMatch(path, 1, "TODO") and truncated false', async () => {
    const root = await tree({ 'a.txt': 'TODO' });
    const file = path.join(root, 'a.txt');
    expect(await findGrepMatches(file, 'TODO')).toEqual({
      matches: [{ path: file, lineNumber: 1, line: 'TODO' }],
      truncated: false,
    });
  });

  it('filters a single-file root by its name', async () => {
    const root = await tree({ 'a.txt': 'hit' });
    const file = path.join(root, 'a.txt');
    expect((await findGrepMatches(file, 'hit', { glob: '*.py' })).matches).toEqual([]);
    expect((await findGrepMatches(file, 'hit', { glob: '*.txt' })).matches).toHaveLength(1);
  });

  it('§10.1.7 maxResults 2 on 3 matching lines returns 2 and truncated', async () => {
    const root = await tree({ 'a.txt': 'hit 1\nhit 2\nhit 3\n' });
    const result = await findGrepMatches(root, 'hit', { maxResults: 2 });
    expect(result.matches.map((m) => m.lineNumber)).toEqual([1, 2]);
    expect(result.truncated).toBe(true);
  });

  it('§10.1.20 (strict by choice) exactly maxResults matches is not truncated', async () => {
    const root = await tree({ 'a.txt': 'hit\nhit\nhit\n' });
    expect((await findGrepMatches(root, 'hit', { maxResults: 3 })).truncated).toBe(false);
    expect((await findGrepMatches(root, 'hit', { maxResults: 2 })).truncated).toBe(true);
  });

  it('§10.1.8 literal "(a+b)" matches only the literal text', async () => {
    const root = await tree({ 'a.txt': 'x (a+b) y\naab\na+b\n' });
    const { matches } = await findGrepMatches(root, '(a+b)', { literal: true });
    expect(matches.map((m) => m.line)).toEqual(['x (a+b) y']);
  });

  it('§10.1.9 caseSensitive excludes "todo"; the default matches both', async () => {
    const root = await tree({ 'a.txt': 'TODO one\ntodo two\n' });
    expect(
      (await findGrepMatches(root, 'TODO', { caseSensitive: true })).matches.map((m) => m.line),
    ).toEqual(['TODO one']);
    expect((await findGrepMatches(root, 'TODO')).matches).toHaveLength(2);
  });

  it('§10.1.10 an invalid regex throws InvalidArgumentError before any I/O', async () => {
    const err = await rejection(findGrepMatches(path.join(tmp, 'missing'), '[invalid'));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toContain('Invalid regex pattern');
  });

  it('§10.1.14 skips a symlink inside the root that points outside it', async () => {
    const outside = await tree({ 'secret.txt': 'needle\n' });
    const root = await tree({ 'plain.txt': 'nothing\n' });
    await symlink(path.join(outside, 'secret.txt'), path.join(root, 'link.txt'));
    await symlink(outside, path.join(root, 'dir-link'));
    expect(await findGrepMatches(root, 'needle')).toEqual({ matches: [], truncated: false });
  });

  it('skips symlinks even when they point inside the root', async () => {
    const root = await tree({ 'real.txt': 'needle\n' });
    await symlink(path.join(root, 'real.txt'), path.join(root, 'alias.txt'));
    const { matches } = await findGrepMatches(root, 'needle');
    expect(matches.map((m) => path.basename(m.path))).toEqual(['real.txt']);
  });

  it('skips ignored directories and names', async () => {
    const root = await tree({
      'node_modules/x.js': 'needle',
      '.git/config': 'needle',
      'debug.log': 'needle',
      'src/ok.js': 'needle',
    });
    const { matches } = await findGrepMatches(root, 'needle');
    expect(matches.map((m) => path.relative(root, m.path))).toEqual(['src/ok.js']);
  });

  it('skips files larger than maxFileSize and keeps one of exactly that size', async () => {
    const root = await tree({
      'big.txt': `needle${'x'.repeat(94)}`,
      'edge.txt': `needle${'x'.repeat(93)}`,
    });
    const { matches } = await findGrepMatches(root, 'needle', { maxFileSize: 99 });
    expect(matches.map((m) => path.basename(m.path))).toEqual(['edge.txt']);
  });

  it('skips lines over 2,000 characters, counting the line break', async () => {
    const a2000 = `needle${'a'.repeat(1994)}`;
    const root = await tree({
      'nl.txt': `${a2000}\nneedle short\n`,
      'eof.txt': a2000,
      'ok.txt': `needle${'a'.repeat(1993)}\n`, // 1,999 characters plus the break: exactly 2,000
    });
    const { matches } = await findGrepMatches(root, 'needle');
    expect(matches.map((m) => [path.basename(m.path), m.lineNumber, m.line.length])).toEqual([
      ['eof.txt', 1, 200],
      ['nl.txt', 2, 12],
      ['ok.txt', 1, 200],
    ]);
  });

  it('cuts matched lines to 200 characters', async () => {
    const root = await tree({ 'a.txt': `needle${'x'.repeat(500)}\n` });
    const [m] = (await findGrepMatches(root, 'needle')).matches;
    expect(m!.line).toBe(`needle${'x'.repeat(191)}...`);
  });

  it('counts lines across \\n, \\r\\n and lone \\r', async () => {
    const root = await tree({ 'a.txt': 'one\r\ntwo\rneedle three\nfour\r\nneedle five' });
    const { matches } = await findGrepMatches(root, 'needle');
    expect(matches.map((m) => [m.lineNumber, m.line])).toEqual([
      [3, 'needle three'],
      [5, 'needle five'],
    ]);
  });

  it('decodes invalid UTF-8 with replacement characters', async () => {
    const root = await tree({
      'a.txt': Buffer.from([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0xff, 0x0a]),
    });
    expect((await findGrepMatches(root, 'needle')).matches[0]!.line).toBe('needle\ufffd');
  });

  it('anchors match per line, including with lookarounds', async () => {
    const root = await tree({ 'a.py': 'x = 1\ndef f():\n  def g():\nend\n' });
    expect((await findGrepMatches(root, '^def')).matches.map((m) => m.lineNumber)).toEqual([2]);
    expect((await findGrepMatches(root, '(?<!\\s)def')).matches.map((m) => m.lineNumber)).toEqual([
      2,
    ]);
    expect((await findGrepMatches(root, 'end$')).matches.map((m) => m.lineNumber)).toEqual([4]);
    expect((await findGrepMatches(root, '1(?!\\n)')).matches.map((m) => m.lineNumber)).toEqual([1]);
  });

  it('orders matches by path (directory contents right after the directory) then line', async () => {
    const root = await tree({
      'b.txt': 'hit\nhit\n',
      'a/z.txt': 'hit\n',
      'a-b.txt': 'hit\n',
      'a/b/c.txt': 'hit\n',
    });
    const { matches } = await findGrepMatches(root, 'hit', { concurrency: 3 });
    expect(matches.map((m) => `${path.relative(root, m.path)}:${m.lineNumber}`)).toEqual([
      'a/b/c.txt:1',
      'a/z.txt:1',
      'a-b.txt:1',
      'b.txt:1',
      'b.txt:2',
    ]);
  });

  it('does not hang on a FIFO inside the tree', async (ctx) => {
    const root = await tree({ 'a.txt': 'hit\n' });
    try {
      await promisify(execFile)('mkfifo', [path.join(root, 'pipe.txt')]);
    } catch {
      ctx.skip();
    }
    expect((await findGrepMatches(root, 'hit')).matches).toHaveLength(1);
  });

  it('a missing root raises SandboxFileNotFoundError without showing the host path', async () => {
    const err = await rejection(
      findGrepMatches(path.join(tmp, 'nope'), 'x', { displayPath: '/mnt/user-data/nope' }),
    );
    expect(err).toBeInstanceOf(SandboxFileNotFoundError);
    expect((err as Error).message).not.toContain(tmp);
  });

  it('a root that is neither file nor directory raises a typed error', async (ctx) => {
    const root = await tree({});
    const fifo = path.join(root, 'pipe');
    try {
      await promisify(execFile)('mkfifo', [fifo]);
    } catch {
      ctx.skip();
    }
    const err = await rejection(findGrepMatches(fifo, 'x'));
    expect(err).toBeInstanceOf(SandboxFileError);
    expect((err as SandboxFileError).kind).toBe('ENOTDIR');
  });

  it('logs an unreadable file at debug level and goes on', async (ctx) => {
    if (process.getuid?.() === 0) ctx.skip(); // root reads everything
    const root = await tree({ 'a.txt': 'hit\n', 'b.txt': 'hit\n' });
    await chmod(path.join(root, 'a.txt'), 0o000);
    const seen: unknown[] = [];
    const logger: Logger = {
      debug: (msg, fields) => seen.push([msg, fields?.code]),
      info: () => {},
      warn: () => {},
      error: () => {},
    };
    const { matches } = await findGrepMatches(root, 'hit', { logger });
    expect(matches.map((m) => path.basename(m.path))).toEqual(['b.txt']);
    expect(seen).toEqual([['grep skipped an unreadable file', 'EACCES']]);
  });

  it('stops with AbortedError when the signal fires', async () => {
    const root = await tree({ 'a.txt': 'hit\n' });
    const controller = new AbortController();
    controller.abort();
    await expect(
      findGrepMatches(root, 'hit', { signal: controller.signal }),
    ).rejects.toBeInstanceOf(AbortedError);
  });

  it('property: matches a model of the tree (order, ignore list, truncation)', async () => {
    const segment = fc.constantFrom('a', 'b.txt', 'c.py', 'node_modules', 'x.log', 'Z');
    const spec = fc.uniqueArray(
      fc.tuple(
        fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join('/')),
        fc.array(fc.constantFrom('hit', 'miss', 'HIT!', ''), { maxLength: 4 }),
      ),
      { maxLength: 6, selector: ([p]) => p },
    );
    await fc.assert(
      fc.asyncProperty(
        spec,
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 4 }),
        async (files, maxResults, concurrency) => {
          const usable = files.filter(([f]) => !files.some(([g]) => g.startsWith(`${f}/`)));
          const root = await tree(
            Object.fromEntries(usable.map(([f, lines]) => [f, lines.join('\n')])),
          );
          const expected = usable
            .filter(([f]) => !shouldIgnorePath(f))
            .sort(([a], [b]) => compareRelativePaths(a, b))
            .flatMap(([f, lines]) =>
              lines.flatMap((line, i) => (/hit/i.test(line) ? [`${f}:${i + 1}:${line}`] : [])),
            );
          const got = await findGrepMatches(root, 'hit', { maxResults, concurrency });
          expect(
            got.matches.map((m) => `${path.relative(root, m.path)}:${m.lineNumber}:${m.line}`),
          ).toEqual(expected.slice(0, maxResults));
          expect(got.truncated).toBe(expected.length > maxResults);
        },
      ),
      { numRuns: 40 },
    );
  });
});
