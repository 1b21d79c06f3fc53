import type { ExecResult } from '../contract/sandbox-exec.js';
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import { RemoteShellSandbox } from './remote-shell-sandbox.js';

const run = promisify(execFile);

/** A remote shell that is this machine's `sh`, with the sandbox's `/work` mapped to a temp dir. */
class HostShellSandbox extends RemoteShellSandbox {
  readonly searches: string[] = [];
  constructor(
    readonly root: string,
    readonly repeatOutput = 1,
  ) {
    super('host-shell');
  }
  protected override remotePath(path: string): string {
    return this.root + path.slice('/work'.length);
  }
  protected override callerPath(remote: string): string {
    return '/work' + remote.slice(this.root.length);
  }
  protected async runSearch(command: string): Promise<string> {
    this.searches.push(command);
    const { stdout } = await run('sh', ['-c', command]).catch((e: { stdout: string }) => e);
    if (this.repeatOutput === 1) return stdout;
    // A file reached twice (a bind mount): every result line printed again after the first pass.
    const [head, ...rest] = stdout.split('\n');
    return [head, ...rest, ...rest].join('\n');
  }
  exec(): Promise<ExecResult> {
    throw new Error('not used');
  }
  override executeCommand(): Promise<string> {
    throw new Error('not used');
  }
  readFile(): Promise<string> {
    throw new Error('not used');
  }
  downloadFile(): Promise<Uint8Array> {
    throw new Error('not used');
  }
  writeFile(): Promise<void> {
    throw new Error('not used');
  }
  updateFile(): Promise<void> {
    throw new Error('not used');
  }
}

describe('RemoteShellSandbox', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sbx-remote-shell-'));
    await mkdir(join(dir, 'src'));
    await writeFile(join(dir, 'src', 'a.ts'), 'const needle = 1;\nother\n');
    await writeFile(join(dir, 'b.md'), 'needle here\n');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('lists, globs and greps through the one search hook, in the caller’s paths', async () => {
    const sandbox = new HostShellSandbox(dir);
    expect((await sandbox.listDir('/work')).sort()).toEqual([
      '/work/b.md',
      '/work/src/',
      '/work/src/a.ts',
    ]);
    expect((await sandbox.glob('/work', '**/*.ts')).paths).toEqual(['/work/src/a.ts']);
    const grep = await sandbox.grep('/work', 'needle');
    expect(grep.matches.map((m) => `${m.path}:${m.lineNumber}`).sort()).toEqual([
      '/work/b.md:1',
      '/work/src/a.ts:1',
    ]);
    expect(sandbox.searches).toHaveLength(3);
  });

  it('refuses a negative depth before anything runs, for every adapter', async () => {
    const sandbox = new HostShellSandbox(dir);
    await expect(sandbox.listDir('/work', { maxDepth: -1 })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(sandbox.searches).toHaveLength(0);
  });

  it('counts a (path, line) once when the search reports it twice', async () => {
    const sandbox = new HostShellSandbox(dir, 2);
    const grep = await sandbox.grep('/work', 'needle');
    expect(grep.matches).toHaveLength(2);
  });

  it('checks the caller’s path with core’s sandbox path rules by default', async () => {
    const sandbox = new HostShellSandbox(dir);
    await expect(sandbox.grep('/work/../etc', 'x')).rejects.toThrow(/traversal|\.\./);
    expect(sandbox.searches).toHaveLength(0);
  });
});
