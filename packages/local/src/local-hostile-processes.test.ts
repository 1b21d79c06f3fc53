import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejectionOf } from '@sbx/core/testing';
import type { Sandbox } from '@sbx/core';
import { LocalSandboxProvider } from './local-sandbox-provider.js';
import { StreamRewriter } from '@sbx/core/internal';

/** What a hostile agent can throw at exec and the background processes of a host sandbox. */
describe('LocalSandbox exec and processes under hostile input', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;
  let sandbox: Sandbox;

  beforeAll(async () => {
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-local-hostile-proc-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true });
    sandbox = provider.get(await provider.acquire({ userId: 'u', threadId: 'hostile' }))!;
  });
  afterAll(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('a cwd outside every mount, through `..`, or naming a file is refused before anything runs', async () => {
    expect(await rejectionOf(sandbox.exec('pwd', { cwd: '/etc' }))).toMatchObject({
      code: expect.stringMatching(/PERMISSION|FILE/),
    });
    expect(
      await rejectionOf(sandbox.exec('pwd', { cwd: '/mnt/user-data/workspace/../../..' })),
    ).toMatchObject({ code: expect.any(String) });
    await sandbox.writeFile('/mnt/user-data/workspace/afile', 'x');
    expect(
      await rejectionOf(sandbox.exec('pwd', { cwd: '/mnt/user-data/workspace/afile' })),
    ).toMatchObject({ kind: 'ENOTDIR' });
    expect(await rejectionOf(sandbox.processes.start('pwd', { cwd: '/etc' }))).toMatchObject({
      code: expect.stringMatching(/PERMISSION|FILE/),
    });
  });

  it('a cwd inside the sandbox shows as its virtual path', async () => {
    const r = await sandbox.exec('pwd', { cwd: '/mnt/user-data/workspace' });
    expect(r.stdout).toBe('/mnt/user-data/workspace\n');
  });

  it('a flood from a background process is bounded: the newest output is kept, the gap reported', async () => {
    const handle = await sandbox.processes.start(
      `head -c ${8 * 1024 * 1024} /dev/zero | tr '\\0' 'a'`,
    );
    await handle.wait();
    const output = await handle.output();
    expect(output.text.length).toBeLessThanOrEqual(1024 * 1024);
    expect(output.droppedBytes).toBeGreaterThan(6 * 1024 * 1024);
  });

  it('refuses an oversized command, an oversized stdin and an oversized write', async () => {
    const big = `echo ${'x'.repeat(300 * 1024)}`;
    expect(await rejectionOf(sandbox.exec(big))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await rejectionOf(sandbox.processes.start(big))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(
      await rejectionOf(sandbox.exec('cat', { stdin: 'y'.repeat(9 * 1024 * 1024) })),
    ).toMatchObject({ code: 'INVALID_ARGUMENT' });
    const cat = await sandbox.processes.start('cat');
    expect(await rejectionOf(cat.write('z'.repeat(2 * 1024 * 1024)))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await cat.kill('SIGKILL');
    await cat.wait();
  });

  it('caps the processes running at once', async () => {
    const started = [];
    for (let i = 0; i < 16; i++) started.push(await sandbox.processes.start('sleep 60'));
    expect(await rejectionOf(sandbox.processes.start('sleep 60'))).toMatchObject({
      code: 'PROCESS_STATE',
    });
    await Promise.all(started.map((h) => h.kill('SIGKILL')));
    await Promise.all(started.map((h) => h.wait()));
    const after = await sandbox.processes.start('true');
    await after.wait();
  });

  it('ids from the model that were never given out find nothing', async () => {
    for (const id of [
      '../p1',
      'p1; rm -rf /',
      'x'.repeat(10_000),
      '',
      '__proto__',
      'constructor',
    ]) {
      expect(await sandbox.processes.get(id)).toBeUndefined();
    }
  });

  it('redacts the call secret and masks host paths in streamed chunks too', async () => {
    const chunks: string[] = [];
    const r = await sandbox.exec('echo "$TOKEN"; pwd', {
      env: { TOKEN: 'super-secret-token-value' },
      cwd: '/mnt/user-data/workspace',
      onStdout: (c) => chunks.push(c),
    });
    const streamed = chunks.join('');
    expect(streamed).toBe(r.stdout);
    expect(streamed).not.toContain('super-secret-token-value');
    expect(streamed).not.toContain(baseDir);
  });

  it('redacts every line of a multi-line secret in streamed chunks (a PEM key printed whole)', async () => {
    // Built at run time: three lines, each long enough to be redacted on its own.
    const key = ['-----BEGIN TEST KEY-----', 'MIIBOgIBAAJBAKj34GkxFhD9', '-----END TEST KEY-----'];
    const chunks: string[] = [];
    const r = await sandbox.exec('printf "%s\\n" "$KEY"', {
      env: { KEY: key.join('\n') },
      onStdout: (c) => chunks.push(c),
    });
    const streamed = chunks.join('');
    for (const line of key) {
      expect(streamed).not.toContain(line);
      expect(r.stdout).not.toContain(line);
    }
    expect(streamed).toContain('[redacted]');
  });
});

describe('StreamRewriter', () => {
  it('rewrites a path or secret split across chunks whole', () => {
    const out: string[] = [];
    const w = new StreamRewriter(
      (t) => t.replaceAll('/host/secret/dir', '/mnt/x'),
      (t) => out.push(t),
    );
    w.write('one /host/sec');
    w.write('ret/dir two\nthree /host/');
    w.write('secret/dir');
    w.end();
    expect(out.join('')).toBe('one /mnt/x two\nthree /mnt/x');
  });

  it('passes a line longer than its hold limit on instead of growing without bound', () => {
    const out: string[] = [];
    const w = new StreamRewriter(
      (t) => t,
      (t) => out.push(t),
    );
    w.write('a'.repeat(70 * 1024));
    expect(out.join('').length).toBe(70 * 1024);
  });
});
