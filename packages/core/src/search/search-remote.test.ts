import { execFile } from 'node:child_process';
import fc from 'fast-check';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxFileNotFoundError,
} from '../errors/errors.js';
import { findGlobMatches } from './glob-find.js';
import { findGrepMatches } from './grep-find.js';
import { listDirTree } from './list-dir.js';
import { remoteOutputLimit } from './search-remote.js';
import { parseFindOutput, planRemoteGlob } from './search-remote-glob.js';
import { buildGrepCommand, parseGrepOutput, planRemoteGrep } from './search-remote-grep.js';
import { parseListDirOutput, planRemoteListDir } from './search-remote-list-dir.js';

let tmp: string;
let n = 0;

async function tree(files: Record<string, string | Buffer>): Promise<string> {
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

interface Toolchain {
  label: string;
  run(command: string): Promise<string>;
}

function shell(file: string, args: string[], env?: NodeJS.ProcessEnv) {
  return (command: string) =>
    new Promise<string>((resolve, reject) => {
      execFile(
        file,
        [...args, '-c', command],
        { encoding: 'utf8', env, maxBuffer: 1 << 24 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
      );
    });
}

const toolchains: Toolchain[] = [];

beforeAll(async () => {
  tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-remote-')));
  toolchains.push({ label: 'GNU', run: shell('sh', []) });
  // A PATH holding only busybox applets: what a minimal sandbox image offers.
  const bin = path.join(tmp, 'busybox-bin');
  await mkdir(bin);
  try {
    const busybox = await new Promise<string>((resolve, reject) =>
      execFile('sh', ['-c', 'command -v busybox'], (err, out) =>
        err ? reject(err) : resolve(out.trim()),
      ),
    );
    for (const tool of ['find', 'grep', 'tr', 'head', 'printf', 'echo', 'sh', '[']) {
      await symlink(busybox, path.join(bin, tool));
    }
    toolchains.push({ label: 'busybox', run: shell(busybox, ['sh'], { PATH: bin }) });
  } catch {
    // busybox not installed: only the GNU toolchain is exercised.
  }
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const each = (name: string, fn: (tc: Toolchain) => Promise<void>) => {
  for (const label of ['GNU', 'busybox']) {
    it(`${name} [${label}]`, async (ctx) => {
      const tc = toolchains.find((t) => t.label === label);
      if (!tc) ctx.skip();
      await fn(tc!);
    });
  }
};

const SAMPLE = {
  'app.py': 'import os\nTODO: fix\n',
  'pkg/util.py': 'def util():\n    return 1  # todo later\n',
  'pkg/data.txt': 'TODO in text\n',
  'node_modules/dep/index.js': 'TODO hidden\n',
  '.git/config': 'TODO hidden\n',
  'debug.log': 'TODO hidden\n',
  'bin.dat': Buffer.concat([Buffer.from('TODO\0binary\n')]),
  'colon:1:dir/notes.md': 'TODO colon path\n',
  'crlf.txt': 'first\r\nTODO crlf\r\n',
  'long.txt': `TODO ${'x'.repeat(400)}\n`,
  "quote's dir/a b.txt": 'TODO spaced\n',
  'empty/': '',
};

describe('remote search commands agree with the local walkers', () => {
  each('glob', async (tc) => {
    const root = await tree(SAMPLE);
    for (const pattern of ['*.py', '**/*.txt', 'pkg/*', '*', 'notes.md']) {
      for (const includeDirs of [false, true]) {
        for (const maxResults of [1, 3, 200]) {
          const plan = planRemoteGlob(root, pattern, { includeDirs, maxResults });
          const local = await findGlobMatches(root, pattern, { includeDirs, maxResults });
          expect({
            pattern,
            includeDirs,
            maxResults,
            ...(await plan.parse(await tc.run(plan.command))),
          }).toEqual({ pattern, includeDirs, maxResults, ...local });
        }
      }
    }
  });

  each('grep', async (tc) => {
    const root = await tree(SAMPLE);
    const cases: [string, Parameters<typeof findGrepMatches>[2]][] = [
      ['todo', {}],
      ['TODO', { caseSensitive: true }],
      ['^TODO', {}],
      ['\\btodo\\b', {}],
      ['(?i)fix$', { caseSensitive: true }],
      ['(a+b)', { literal: true }],
      ['todo', { glob: '**/*.py' }],
      ['todo', { glob: '*.md' }],
      ['todo', { maxResults: 2 }],
      ['return \\d', {}],
      ['TODO (?=crlf)', {}],
    ];
    for (const [pattern, options] of cases) {
      const plan = planRemoteGrep(root, pattern, options);
      const local = await findGrepMatches(root, pattern, options);
      const remote = await plan.parse(await tc.run(plan.command));
      expect({ pattern, options, ...remote }).toEqual({ pattern, options, ...local });
    }
  });

  each('grep on a single file', async (tc) => {
    const root = await tree({ 'notes.txt': 'x\nTODO here\n', 'debug.log': 'TODO\n' });
    for (const file of ['notes.txt', 'debug.log']) {
      const target = path.join(root, file);
      const plan = planRemoteGrep(target, 'todo');
      expect(await plan.parse(await tc.run(plan.command))).toEqual(
        await findGrepMatches(target, 'todo'),
      );
    }
  });

  each('listDir', async (tc) => {
    const root = await tree(SAMPLE);
    for (const maxDepth of [1, 2, 3]) {
      const plan = planRemoteListDir(root, { maxDepth });
      expect(await plan.parse(await tc.run(plan.command))).toEqual(
        await listDirTree(root, { maxDepth }),
      );
    }
  });

  each('a name holding a newline survives the round trip', async (tc) => {
    const root = await tree({ 'new\nline.txt': 'TODO\n' });
    const glob = planRemoteGlob(root, '*.txt');
    expect(glob.parse(await tc.run(glob.command)).paths).toEqual([
      path.join(root, 'new\nline.txt'),
    ]);
    const ls = planRemoteListDir(root);
    expect(ls.parse(await tc.run(ls.command))).toEqual([path.join(root, 'new\nline.txt')]);
  });

  each('a name holding a newline or ":<digits>:" is found by grep', async (tc) => {
    const root = await tree({ 'new\nline.txt': 'TODO\n', 'k:12:v/x.txt': 'a\nTODO\n' });
    const plan = planRemoteGrep(root, 'todo');
    expect(await plan.parse(await tc.run(plan.command))).toEqual(
      await findGrepMatches(root, 'todo'),
    );
    expect((await findGrepMatches(root, 'todo')).matches).toHaveLength(2);
  });

  each(
    'typed errors for a missing root, a file root (glob) and a special file (grep)',
    async (tc) => {
      const root = await tree({ 'f.txt': 'x' });
      const missing = planRemoteGlob(path.join(root, 'nope'), '*', {
        displayPath: '/mnt/user-data/nope',
      });
      const m = await tc.run(missing.command);
      expect(() => missing.parse(m)).toThrow(SandboxFileNotFoundError);
      try {
        missing.parse(m);
      } catch (e) {
        expect((e as SandboxFileNotFoundError).baseMessage).toBe(
          'No such file or directory: /mnt/user-data/nope',
        );
      }
      const fileRoot = planRemoteGlob(path.join(root, 'f.txt'), '*');
      const f = await tc.run(fileRoot.command);
      expect(() => fileRoot.parse(f)).toThrow(SandboxFileError);
      const grepMissing = planRemoteGrep(path.join(root, 'nope'), 'x');
      await expect(grepMissing.parse('sbx:missing\n')).rejects.toThrow(SandboxFileNotFoundError);
      await expect(grepMissing.parse('sbx:other\n')).rejects.toThrow(SandboxFileError);
      const ls = planRemoteListDir(path.join(root, 'nope'));
      expect(ls.parse(await tc.run(ls.command))).toEqual([]);
      const lsFile = planRemoteListDir(path.join(root, 'f.txt'));
      expect(lsFile.parse(await tc.run(lsFile.command))).toEqual([]);
    },
  );

  each('§10.1.16 grep on a single file never treats the path as a directory', async (tc) => {
    const root = await tree({ 'a.txt': 'TODO\n' });
    const file = path.join(root, 'a.txt');
    const plan = planRemoteGrep(file, 'TODO');
    const out = await tc.run(plan.command);
    expect(out.startsWith('sbx:file')).toBe(true);
    expect(await plan.parse(out)).toEqual({
      matches: [{ path: file, lineNumber: 1, line: 'TODO' }],
      truncated: false,
    });
  });

  each('skips files larger than maxFileSize', async (tc) => {
    const root = await tree({
      'big.txt': `hit${'x'.repeat(97)}`,
      'edge.txt': `hit${'x'.repeat(96)}`,
    });
    const plan = planRemoteGrep(root, 'hit', { maxFileSize: 99 });
    expect(
      (await plan.parse(await tc.run(plan.command))).matches.map((m) => path.basename(m.path)),
    ).toEqual(['edge.txt']);
  });
  it('property: remote glob and grep equal the local walkers on random trees', async (ctx) => {
    if (toolchains.length === 0) ctx.skip();
    const segment = fc.constantFrom('a', 'b.py', 'c.txt', 'node_modules', 'x.log', 'Z', 'k:1:v');
    const spec = fc.uniqueArray(
      fc.tuple(
        fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join('/')),
        fc.array(fc.constantFrom('hit', 'miss', 'HIT!', '', 'a hit b'), { maxLength: 4 }),
      ),
      { maxLength: 6, selector: ([p]) => p },
    );
    await fc.assert(
      fc.asyncProperty(
        spec,
        fc.constantFrom('*', '*.py', '**/*.txt', 'a/*'),
        fc.integer({ min: 1, max: 5 }),
        fc.constantFrom(...toolchains),
        async (files, pattern, maxResults, tc) => {
          const usable = files.filter(([f]) => !files.some(([g]) => g.startsWith(`${f}/`)));
          const root = await tree(
            Object.fromEntries(usable.map(([f, lines]) => [f, lines.join('\n')])),
          );
          const glob = planRemoteGlob(root, pattern, { maxResults, includeDirs: true });
          expect(glob.parse(await tc.run(glob.command))).toEqual(
            await findGlobMatches(root, pattern, { maxResults, includeDirs: true }),
          );
          const grep = planRemoteGrep(root, 'hit', { maxResults, glob: pattern });
          expect(await grep.parse(await tc.run(grep.command))).toEqual(
            await findGrepMatches(root, 'hit', { maxResults, glob: pattern }),
          );
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe('remote search parsers', () => {
  const root = '/mnt/workspace';

  it('§10.1.15 drops entries outside the requested root (find and grep)', async () => {
    const find =
      'sbx:dir\n/mnt/workspace/a.py\n/mnt/workspace2/b.py\n/mnt/workspace-sibling/c.py\n';
    expect(parseFindOutput(find, root, '*.py').paths).toEqual(['/mnt/workspace/a.py']);
    const grep =
      'sbx:dir:nul\n/mnt/workspace/a.py\x001:hit\n/mnt/workspace2/b.py\x001:hit\n/mnt/user-data/workspace-sibling/c\x001:hit\n';
    expect((await parseGrepOutput(grep, root, 'hit')).matches.map((m) => m.path)).toEqual([
      '/mnt/workspace/a.py',
    ]);
    const ls = 'sbx:dir\n/mnt/workspace/d\n/mnt/workspace2/e\n\n/mnt/workspace/f\n/etc/passwd\n';
    expect(parseListDirOutput(ls, root)).toEqual(['/mnt/workspace/d/', '/mnt/workspace/f']);
  });

  it('refuses entries that climb out with "..", even under the root prefix', () => {
    expect(parseFindOutput('sbx:dir\n/mnt/workspace/../etc/x\n', root, '*').paths).toEqual([]);
  });

  it('§10.1.17 validates the regex locally and raises on "[invalid" before any remote call', () => {
    expect(() => buildGrepCommand(root, '[invalid')).toThrow(InvalidArgumentError);
    expect(() => planRemoteGrep(root, '[invalid')).toThrow(/Invalid regex pattern/);
  });

  it('re-checks every line with the JS expression (the ERE prefilter may over-match)', async () => {
    const out = 'sbx:dir:nul\n/mnt/workspace/a\x001:sword\n/mnt/workspace/a\x002:swordfish\n';
    expect(
      (await parseGrepOutput(out, root, 'sword(?!fish)')).matches.map((m) => m.lineNumber),
    ).toEqual([1]);
  });

  it('reads plain "grep -rnH" output without a header, ":" in text included', async () => {
    const out = '/mnt/workspace/a.txt:3:time 12:30:45\n/mnt/workspace/b.txt:x:bad\n';
    expect(await parseGrepOutput(out, root, 'time')).toEqual({
      matches: [{ path: '/mnt/workspace/a.txt', lineNumber: 3, line: 'time 12:30:45' }],
      truncated: false,
    });
  });

  it('drops busybox lines holding NUL (binary) and strips a trailing CR', async () => {
    const out = 'sbx:dir\n/mnt/workspace/bin:1:hit\x00x\n/mnt/workspace/t.txt:1:hit\r\n';
    expect((await parseGrepOutput(out, root, 'hit')).matches).toEqual([
      { path: '/mnt/workspace/t.txt', lineNumber: 1, line: 'hit' },
    ]);
  });

  it('sorts into the local order and reports truncation when more matched', async () => {
    const out =
      'sbx:dir\n/mnt/workspace/b.txt:2:hit\n/mnt/workspace/a/x.txt:1:hit\n/mnt/workspace/b.txt:1:hit\n';
    expect(await parseGrepOutput(out, root, 'hit', { maxResults: 2 })).toEqual({
      matches: [
        { path: '/mnt/workspace/a/x.txt', lineNumber: 1, line: 'hit' },
        { path: '/mnt/workspace/b.txt', lineNumber: 1, line: 'hit' },
      ],
      truncated: true,
    });
  });

  it('reports truncation when the output cap was reached, even below maxResults', () => {
    const limit = remoteOutputLimit(1);
    const lines = Array.from({ length: limit }, (_, i) => `/mnt/workspace/f${i}.txt`);
    const out = `sbx:dir\n${lines.join('\n')}\n`;
    expect(parseFindOutput(out, root, 'f0.txt', { maxResults: 1 })).toEqual({
      paths: ['/mnt/workspace/f0.txt'],
      truncated: true,
    });
    expect(
      parseFindOutput(`sbx:dir\n${lines[0]}\n`, root, 'f0.txt', { maxResults: 1 }).truncated,
    ).toBe(false);
  });

  it('reports truncation when one file used up its -m budget', async () => {
    const lines = Array.from(
      { length: 50 },
      (_, i) => `/mnt/workspace/a.txt\x00${i + 1}:${i === 0 ? 'hit' : 'x'}`,
    );
    const out = `sbx:dir:nul\n${lines.join('\n')}\n`;
    expect(await parseGrepOutput(out, root, 'hit', { maxResults: 10 })).toEqual({
      matches: [{ path: '/mnt/workspace/a.txt', lineNumber: 1, line: 'hit' }],
      truncated: true,
    });
  });

  it('ignores a record cut short by head', async () => {
    const out = 'sbx:dir:nul\n/mnt/workspace/a\x001:hit\n/mnt/workspace/b\x002:hi';
    expect((await parseGrepOutput(out, root, 'hit')).matches.map((m) => m.path)).toEqual([
      '/mnt/workspace/a',
    ]);
  });

  it('rejects a relative root', () => {
    expect(() => planRemoteGlob('relative/dir', '*')).toThrow(InvalidArgumentError);
  });

  it('quotes the root and the pattern into the command', () => {
    const plan = planRemoteGrep("/mnt/it's here", "a'b; rm -rf /", { literal: true });
    expect(plan.command).toContain(`R='/mnt/it'\\''s here'`);
    expect(plan.command).toContain(`-e 'a'\\''b; rm -rf /'`);
  });
});
