import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSbxError } from '../errors/errors.js';
import type { Sandbox } from '../contract/sandbox.js';

export interface SandboxUnderTest {
  sandbox: Sandbox;
  /** A writable, initially empty virtual directory inside the sandbox, e.g. `/mnt/user-data/workspace`. */
  workdir: string;
  cleanup?: () => Promise<void>;
}

export interface SandboxContractOptions {
  /**
   * The workdir lives under `/mnt/user-data`, so `downloadFile` is allowed there and refused outside.
   * Default true.
   */
  userDataContract?: boolean;
}

function errorKind(err: unknown): string | undefined {
  return isSbxError(err) ? (err as unknown as { kind?: string }).kind : undefined;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to reject, but it resolved');
}

/**
 * The behaviour every `Sandbox` implementation must share: output assembly, per-call env, file
 * round trips, listing, glob and grep conventions, and typed errors. Run it from a provider's test
 * file: `describeSandboxContract('LocalSandbox', async () => ({ sandbox, workdir, cleanup }))`.
 */
export function describeSandboxContract(
  name: string,
  make: () => Promise<SandboxUnderTest>,
  options: SandboxContractOptions = {},
): void {
  const userData = options.userDataContract ?? true;

  describe(`Sandbox contract: ${name}`, () => {
    let sut: SandboxUnderTest;
    let sb: Sandbox;
    let dir: string;
    let n = 0;
    const fresh = () => `${dir}/case-${++n}`;

    beforeAll(async () => {
      sut = await make();
      sb = sut.sandbox;
      dir = sut.workdir.replace(/\/+$/, '');
    });
    afterAll(async () => {
      await sut?.cleanup?.();
    });

    describe('executeCommand', () => {
      it('returns stdout of a successful command', async () => {
        expect(await sb.executeCommand('echo hello-contract')).toContain('hello-contract');
      });
      it('returns "(no output)" for a silent successful command', async () => {
        expect(await sb.executeCommand('true')).toBe('(no output)');
      });
      it('reports a non-zero exit status in the text, not as an exception', async () => {
        expect(await sb.executeCommand('exit 3')).toBe('\nExit Code: 3');
      });
      it('assembles stdout, the Std Error header and the exit code exactly', async () => {
        expect(await sb.executeCommand('echo out; echo err >&2; exit 2')).toBe(
          'out\n\nStd Error:\nerr\n\nExit Code: 2',
        );
      });
      it('shows stderr without a header when stdout is empty', async () => {
        expect(await sb.executeCommand('echo err >&2')).toBe('err\n');
      });
      it('injects per-call env that does not persist into later calls', async () => {
        const first = await sb.executeCommand('echo "v=$SBX_CONTRACT_VAR"', {
          env: { SBX_CONTRACT_VAR: 'shown' },
        });
        expect(first).toContain('v=shown');
        const second = await sb.executeCommand('echo "v=$SBX_CONTRACT_VAR"');
        expect(second).toContain('v=');
        expect(second).not.toContain('shown');
      });
      it('rejects an env key that is not a POSIX name before running anything', async () => {
        const marker = `${fresh()}.marker`;
        const err = await rejection(
          sb.executeCommand(`echo ran > ${marker}`, { env: { 'X;touch /tmp/x': 'v' } }),
        );
        expect(isSbxError(err) && err.code).toBe('INVALID_ARGUMENT');
        expect(
          await sb.executeCommand(`test -e ${marker} && echo exists || echo absent`),
        ).toContain('absent');
      });
      it('runs every part of a command where it starts: `true & pwd` prints what `pwd` does', async () => {
        // The last line is pwd's: a provider may put a notice before it (AIO says so when the
        // image dropped the shell session), which says nothing about where the command ran.
        const lastLine = (out: string) => out.trimEnd().split('\n').at(-1);
        const where = lastLine(await sb.executeCommand('pwd'));
        expect(lastLine(await sb.executeCommand('true & pwd'))).toBe(where);
        expect(lastLine(await sb.executeCommand('true &\npwd; wait'))).toBe(where);
      });
      it('runs scoped commands (pass-through or session) with the same output contract', async () => {
        expect(
          await sb.executeCommandInScope('echo scoped-ok', { scopeId: 'contract-scope' }),
        ).toContain('scoped-ok');
        await sb.releaseCommandScope('contract-scope');
        await sb.releaseCommandScope('contract-scope');
      });
    });

    describe('files', () => {
      it('round-trips text through writeFile and readFile, creating parent directories', async () => {
        const p = `${fresh()}/nested/a.txt`;
        await sb.writeFile(p, 'hello\nworld\n');
        expect(await sb.readFile(p)).toBe('hello\nworld\n');
      });
      it('overwrites by default and appends on request', async () => {
        const p = `${fresh()}.txt`;
        await sb.writeFile(p, 'one\n');
        await sb.writeFile(p, 'two\n');
        await sb.writeFile(p, 'three\n', { append: true });
        expect(await sb.readFile(p)).toBe('two\nthree\n');
      });
      it('append creates a missing file', async () => {
        const p = `${fresh()}.txt`;
        await sb.writeFile(p, 'x', { append: true });
        expect(await sb.readFile(p)).toBe('x');
      });
      it('reads 1-based inclusive line ranges, clamping past the end', async () => {
        const p = `${fresh()}.txt`;
        await sb.writeFile(p, 'line1\nline2\nline3\nline4\nline5\n');
        expect(await sb.readFile(p, { startLine: 3 })).toBe('line3\nline4\nline5');
        expect(await sb.readFile(p, { endLine: 2 })).toBe('line1\nline2');
        expect(await sb.readFile(p, { startLine: 2, endLine: 4 })).toBe('line2\nline3\nline4');
        expect(await sb.readFile(p, { startLine: 99 })).toBe('');
        expect(await sb.readFile(p, { startLine: 4, endLine: 99 })).toBe('line4\nline5');
      });
      it('raises a typed not-found error for a missing file', async () => {
        const err = await rejection(sb.readFile(`${fresh()}/missing.txt`));
        expect(isSbxError(err)).toBe(true);
        expect(errorKind(err)).toBe('ENOENT');
      });
      it('round-trips binary bytes through updateFile and downloadFile', async () => {
        const p = `${fresh()}/blob.bin`;
        const bytes = new Uint8Array([0, 1, 2, 0xfe, 0xff, 10, 13, 0]);
        await sb.updateFile(p, bytes);
        expect(Array.from(await sb.downloadFile(p))).toEqual(Array.from(bytes));
      });
      if (userData) {
        it('refuses downloads outside /mnt/user-data with a permission error', async () => {
          const err = await rejection(sb.downloadFile('/etc/hostname'));
          expect(isSbxError(err)).toBe(true);
          expect(errorKind(err)).toBe('EACCES');
        });
      }
    });

    describe('listDir', () => {
      it('lists sorted absolute paths with trailing / on directories, two levels by default', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/b.txt`, 'b');
        await sb.writeFile(`${root}/a/inner.txt`, 'i');
        await sb.writeFile(`${root}/a/deep/too-deep.txt`, 'd');
        const entries = await sb.listDir(root);
        expect(entries).toEqual([...entries].sort());
        expect(entries).toContain(`${root}/a/`);
        expect(entries).toContain(`${root}/a/inner.txt`);
        expect(entries).toContain(`${root}/b.txt`);
        expect(entries).toContain(`${root}/a/deep/`);
        expect(entries).not.toContain(`${root}/a/deep/too-deep.txt`);
        expect(entries).not.toContain(`${root}/`);
      });
      it('honours maxDepth 1', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/a/inner.txt`, 'i');
        expect(await sb.listDir(root, { maxDepth: 1 })).toEqual([`${root}/a/`]);
      });
      it('skips ignored names such as node_modules', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/node_modules/x.js`, 'x');
        await sb.writeFile(`${root}/kept.txt`, 'k');
        expect(await sb.listDir(root)).toEqual([`${root}/kept.txt`]);
      });
      it('returns [] for a missing directory', async () => {
        expect(await sb.listDir(`${fresh()}/nope`)).toEqual([]);
      });
    });

    describe('glob', () => {
      it('matches a slash-less pattern against basenames at any depth', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/a.txt`, 'a');
        await sb.writeFile(`${root}/sub/b.txt`, 'b');
        await sb.writeFile(`${root}/sub/c.md`, 'c');
        const { paths, truncated } = await sb.glob(root, '*.txt');
        expect([...paths].sort()).toEqual([`${root}/a.txt`, `${root}/sub/b.txt`]);
        expect(truncated).toBe(false);
      });
      it('includes directories only when asked', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/pkg/x.txt`, 'x');
        expect((await sb.glob(root, 'pkg')).paths).toEqual([]);
        expect((await sb.glob(root, 'pkg', { includeDirs: true })).paths).toEqual([`${root}/pkg`]);
      });
      it('caps results and reports truncation when more matches exist', async () => {
        const root = fresh();
        for (let i = 0; i < 5; i++) await sb.writeFile(`${root}/f${i}.log.txt`, 'x');
        const { paths, truncated } = await sb.glob(root, '*.txt', { maxResults: 2 });
        expect(paths).toHaveLength(2);
        expect(truncated).toBe(true);
      });
      it('raises a typed not-found error for a missing root', async () => {
        const err = await rejection(sb.glob(`${fresh()}/nope`, '*'));
        expect(isSbxError(err)).toBe(true);
      });
    });

    describe('grep', () => {
      it('searches a directory case-insensitively by default, with 1-based line numbers', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/a.txt`, 'first\nNeedle here\nlast\n');
        await sb.writeFile(`${root}/b.txt`, 'nothing\n');
        const { matches, truncated } = await sb.grep(root, 'needle');
        expect(matches).toEqual([{ path: `${root}/a.txt`, lineNumber: 2, line: 'Needle here' }]);
        expect(truncated).toBe(false);
      });
      it('honours caseSensitive', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/a.txt`, 'Needle\n');
        expect((await sb.grep(root, 'needle', { caseSensitive: true })).matches).toEqual([]);
      });
      it('searches a single file', async () => {
        const p = `${fresh()}.txt`;
        await sb.writeFile(p, 'x\ntodo: one\n');
        const { matches } = await sb.grep(p, 'TODO');
        expect(matches.map((m) => m.lineNumber)).toEqual([2]);
      });
      it('treats a literal pattern literally', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/a.txt`, 'x (a+b) y\naab\n');
        const { matches } = await sb.grep(root, '(a+b)', { literal: true });
        expect(matches.map((m) => m.line)).toEqual(['x (a+b) y']);
      });
      it('filters candidate files with a glob', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/a.py`, 'hit\n');
        await sb.writeFile(`${root}/a.txt`, 'hit\n');
        const { matches } = await sb.grep(root, 'hit', { glob: '*.py' });
        expect(matches.map((m) => m.path)).toEqual([`${root}/a.py`]);
      });
      it('cuts long match lines to 200 characters', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/a.txt`, `needle${'x'.repeat(500)}\n`);
        const [m] = (await sb.grep(root, 'needle')).matches;
        expect(m?.line).toHaveLength(200);
        expect(m?.line.endsWith('...')).toBe(true);
      });
      it('caps results and reports truncation when more matches exist', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/a.txt`, 'hit\nhit\nhit\nhit\n');
        const { matches, truncated } = await sb.grep(root, 'hit', { maxResults: 2 });
        expect(matches).toHaveLength(2);
        expect(truncated).toBe(true);
      });
      it('rejects an invalid regex with a typed error', async () => {
        const root = fresh();
        await sb.writeFile(`${root}/a.txt`, 'x\n');
        const err = await rejection(sb.grep(root, '[invalid'));
        expect(isSbxError(err) && err.code).toBe('INVALID_ARGUMENT');
      });
    });
  });
}
