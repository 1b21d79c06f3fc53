import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MemorySandbox } from './memory-sandbox.js';
import { describeSandboxContract } from './sandbox-contract.js';

/**
 * The memory sandbox has no shell; for the contract run its command handler runs real `bash` and
 * assembles the output the way every sandbox must, so the file semantics are what is under test.
 */
function runBash(
  command: string,
  env: Readonly<Record<string, string>> | undefined,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      let out = stdout;
      if (stderr) out = out ? `${out}\nStd Error:\n${stderr}` : stderr;
      if (code !== 0) out += `\nExit Code: ${code}`;
      resolve(out || '(no output)');
    });
  });
}

describeSandboxContract('MemorySandbox', async () => ({
  sandbox: new MemorySandbox('memory:contract', {
    onCommand: (command, options) => runBash(command, options.env),
  }),
  workdir: '/mnt/user-data/workspace',
}));

describe('MemorySandbox specifics', () => {
  it('reports binary content as EILSEQ, a directory as EISDIR, a file parent as ENOTDIR', async () => {
    const sb = new MemorySandbox('m', {
      files: { '/d/bin': new Uint8Array([0xff, 0xfe]), '/d/f': 'x' },
    });
    await expect(sb.readFile('/d/bin')).rejects.toMatchObject({ kind: 'EILSEQ' });
    await expect(sb.readFile('/d')).rejects.toMatchObject({ kind: 'EISDIR' });
    await expect(sb.readFile('/d/f/child')).rejects.toMatchObject({ kind: 'ENOTDIR' });
    await expect(sb.writeFile('/d/f/child', 'x')).rejects.toMatchObject({ kind: 'ENOTDIR' });
  });

  it('refuses writes below read-only prefixes and everything below denied prefixes', async () => {
    const sb = new MemorySandbox('m', {
      files: { '/ro/a.txt': 'a', '/no/b.txt': 'b' },
      readOnlyPaths: ['/ro'],
      deniedPaths: ['/no'],
    });
    expect(await sb.readFile('/ro/a.txt')).toBe('a');
    await expect(sb.writeFile('/ro/a.txt', 'x')).rejects.toMatchObject({ kind: 'EROFS' });
    await expect(sb.readFile('/no/b.txt')).rejects.toMatchObject({ kind: 'EACCES' });
  });

  it('lets a test hold an operation through intercept', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const sb = new MemorySandbox('m', {
      intercept: (call) => (call.operation === 'writeFile' ? held : undefined),
    });
    let done = false;
    const write = sb.writeFile('/a.txt', 'x').then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    expect(sb.fileText('/a.txt')).toBeUndefined();
    release();
    await write;
    expect(sb.fileText('/a.txt')).toBe('x');
  });
});
