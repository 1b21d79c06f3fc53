import { isSbxError } from '@sbx/core';
import { deriveSandboxScopeToken } from '@sbx/core/provider-kit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { E2BRemoteSandbox } from './e2b-client.js';
import { isSandboxGoneError } from './e2b-errors.js';
import { E2BSandbox, MAX_DOWNLOAD_BYTES, REAPED_MESSAGE } from './e2b-sandbox.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';
import { fakeErrors, sdkError } from './testing/fake-e2b-errors.js';

let fake: FakeE2BClient;
let remote: E2BRemoteSandbox;
let sandbox: E2BSandbox;

beforeEach(async () => {
  fake = new FakeE2BClient();
  remote = await fake.create({ template: 'base', metadata: {} });
  await remote.commands.run('mkdir -p /home/user/workspace /home/user/src /home/user/other_dir');
  sandbox = new E2BSandbox('sbx-id', remote);
});
afterEach(async () => {
  await fake.dispose();
});

/** A handle whose `files.read` streams are observable (cancel/close) for the download tests. */
function streamingHandle(bytes: number, options: { rejectStream?: boolean } = {}) {
  const state = { cancelled: false, pulled: 0, formats: [] as string[] };
  const handle = {
    ...remote,
    files: {
      ...remote.files,
      read: async (_p: string, opts?: { format?: string }) => {
        state.formats.push(opts?.format ?? 'text');
        if (opts?.format === 'stream') {
          if (options.rejectStream)
            throw sdkError('InvalidArgumentError', 'unsupported format: stream');
          let sent = 0;
          return new ReadableStream<Uint8Array>({
            pull(controller) {
              if (sent >= bytes) return controller.close();
              const n = Math.min(8 * 1024 * 1024, bytes - sent);
              sent += n;
              state.pulled = sent;
              controller.enqueue(new Uint8Array(n));
            },
            cancel() {
              state.cancelled = true;
            },
          });
        }
        return new Uint8Array(bytes);
      },
    },
  } as unknown as E2BRemoteSandbox;
  return { handle, state };
}

describe('§8.1 E2B adapter', () => {
  it('§8.1.1 the remote id falls back to the sbx id when the client has none', () => {
    const anonymous = new E2BSandbox('sbx-fallback', { ...remote, sandboxId: '' });
    expect(anonymous.remoteId).toBe('sbx-fallback');
    expect(sandbox.remoteId).toBe(remote.sandboxId);
  });

  it('§8.1.2 the seed is deterministic per (user, thread) and differs for another user or thread', () => {
    const a = deriveSandboxScopeToken({ userId: 'u', threadId: 't' });
    expect(deriveSandboxScopeToken({ userId: 'u', threadId: 't' })).toBe(a);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(deriveSandboxScopeToken({ userId: 'u2', threadId: 't' })).not.toBe(a);
    expect(deriveSandboxScopeToken({ userId: 'u', threadId: 't2' })).not.toBe(a);
  });

  it('§8.1.3 "gone" matches the not-found signatures and nothing else', () => {
    expect(isSandboxGoneError(new Error('Paused sandbox abc not found'))).toBe(true);
    expect(isSandboxGoneError(new Error('The sandbox was not found: whatever'))).toBe(true);
    expect(isSandboxGoneError(new Error('sandbox not found'))).toBe(true);
    expect(isSandboxGoneError(fakeErrors.notRunning())).toBe(true);
    expect(isSandboxGoneError(fakeErrors.envdGone())).toBe(true);
    expect(isSandboxGoneError(new Error('Connection reset by peer'))).toBe(false);
    expect(isSandboxGoneError(new Error('invalid path'))).toBe(false);
    expect(isSandboxGoneError(fakeErrors.commandTimeout())).toBe(false);
  });

  it('§8.1.4 a gone error marks the adapter dead; the next call answers without the SDK', async () => {
    fake.fail('run', fakeErrors.notRunning());
    expect(await sandbox.executeCommand('echo hi')).toMatch(/^Error: .*not running anymore/);
    expect(sandbox.isDead).toBe(true);
    const before = fake.callsOf('run').length;
    expect(await sandbox.executeCommand('echo hi')).toBe(REAPED_MESSAGE);
    expect(fake.callsOf('run')).toHaveLength(before);
  });

  it('§8.1.5 a successful command returns stdout and the adapter stays alive', async () => {
    expect(await sandbox.executeCommand('echo hello')).toBe('hello\n');
    expect(sandbox.isDead).toBe(false);
  });

  it('§8.1.5 a non-zero exit (SDK CommandExitError) is an ordinary result with its exit code', async () => {
    expect(await sandbox.executeCommand('echo out; exit 7')).toBe('out\n\nExit Code: 7');
  });

  it('§8.1.6 an unrelated exception returns Error: ... without marking dead', async () => {
    fake.fail('run', fakeErrors.connectionReset());
    expect(await sandbox.executeCommand('echo hi')).toBe('Error: Connection reset by peer');
    expect(sandbox.isDead).toBe(false);
  });

  it('§8.1.7 env goes as envs and the timeout as timeoutMs; the secret never enters the command', async () => {
    await sandbox.executeCommand('echo "$TOKEN_X"', {
      env: { TOKEN_X: 's3cret-value' },
      timeoutMs: 5000,
    });
    const call = fake.callsOf('run').at(-1)!.detail as {
      cmd: string;
      envs?: unknown;
      timeoutMs?: number;
    };
    expect(call.envs).toEqual({ TOKEN_X: 's3cret-value' });
    expect(call.timeoutMs).toBe(5000);
    expect(call.cmd).not.toContain('s3cret-value');
  });

  it('§8.1.8 without env and timeout neither envs nor timeoutMs is passed', async () => {
    await sandbox.executeCommand('true');
    const call = fake.callsOf('run').at(-1)!.detail as Record<string, unknown>;
    expect('envs' in call).toBe(false);
    expect('timeoutMs' in call).toBe(false);
  });

  it('§8.1.9 an invalid env key raises (extra_env key, POSIX) before any SDK call', async () => {
    const before = fake.calls.length;
    const err = await sandbox
      .executeCommand('true', { env: { 'BAD KEY': 'v' } })
      .catch((e: unknown) => e);
    expect(isSbxError(err) && err.code).toBe('INVALID_ARGUMENT');
    expect(String((err as Error).message)).toContain('extra_env key');
    expect(String((err as Error).message)).toContain('POSIX');
    expect(fake.calls).toHaveLength(before);
  });

  it('§8.1.10 ping: false and dead on a gone error, true on an unknown error', async () => {
    fake.fail('run', new Error('socket hang up'));
    expect(await sandbox.ping()).toBe(true);
    expect(sandbox.isDead).toBe(false);
    fake.fail('run', fakeErrors.connectNotFound(remote.sandboxId));
    expect(await sandbox.ping()).toBe(false);
    expect(sandbox.isDead).toBe(true);
  });

  it('§8.1.11 the liveness probe runs `true`', async () => {
    expect(await sandbox.ping()).toBe(true);
    expect((fake.callsOf('run').at(-1)!.detail as { cmd: string }).cmd).toBe('true');
    fake.reap(remote.sandboxId);
    expect(await sandbox.ping()).toBe(false);
  });

  it('§8.1.12 readFile: full reads and 1-based inclusive ranges on the remapped path', async () => {
    await sandbox.writeFile('/mnt/user-data/workspace/r.txt', 'l1\nl2\nl3\nl4\n');
    expect(await sandbox.readFile('/mnt/user-data/workspace/r.txt')).toBe('l1\nl2\nl3\nl4\n');
    expect(await sandbox.readFile('/mnt/user-data/workspace/r.txt', { startLine: 3 })).toBe(
      'l3\nl4',
    );
    expect(await sandbox.readFile('/mnt/user-data/workspace/r.txt', { endLine: 2 })).toBe('l1\nl2');
    expect(
      await sandbox.readFile('/mnt/user-data/workspace/r.txt', { startLine: 2, endLine: 3 }),
    ).toBe('l2\nl3');
    const reads = fake.callsOf('read').map((c) => (c.detail as { path: string }).path);
    expect(new Set(reads)).toEqual(new Set(['/home/user/workspace/r.txt']));
  });

  it('§8.1.13 readFile of a missing file is a typed not-found error', async () => {
    const err = await sandbox.readFile('/mnt/user-data/workspace/missing').catch((e: unknown) => e);
    expect(isSbxError(err) && (err as { kind?: string }).kind).toBe('ENOENT');
  });

  it('§8.1.14 downloadFile streams, returns all bytes, and the stream ends', async () => {
    const { handle, state } = streamingHandle(20 * 1024 * 1024);
    const s = new E2BSandbox('d', handle);
    const bytes = await s.downloadFile('/mnt/user-data/outputs/a.bin');
    expect(bytes.byteLength).toBe(20 * 1024 * 1024);
    expect(state.formats).toEqual(['stream']);
  });

  it('§8.1.15 downloadFile aborts with EFBIG past 100 MiB before buffering it all, cancelling the stream', async () => {
    const { handle, state } = streamingHandle(MAX_DOWNLOAD_BYTES + 64 * 1024 * 1024);
    const s = new E2BSandbox('d', handle);
    const err = await s.downloadFile('/mnt/user-data/outputs/big.bin').catch((e: unknown) => e);
    expect((err as { kind?: string }).kind).toBe('EFBIG');
    expect(state.cancelled).toBe(true);
    expect(state.pulled).toBeLessThan(MAX_DOWNLOAD_BYTES + 64 * 1024 * 1024);
  });

  it('§8.1.16 downloadFile falls back to bytes when the stream format is rejected', async () => {
    const { handle, state } = streamingHandle(10, { rejectStream: true });
    const s = new E2BSandbox('d', handle);
    expect((await s.downloadFile('/mnt/user-data/outputs/a.bin')).byteLength).toBe(10);
    expect(state.formats).toEqual(['stream', 'bytes']);
  });

  describe('grep glob scoping', () => {
    beforeEach(async () => {
      await sandbox.writeFile('/mnt/user-data/workspace/src/a.js', 'needle\n');
      await sandbox.writeFile('/mnt/user-data/workspace/other_dir/b.js', 'needle\n');
      await sandbox.writeFile('/mnt/user-data/workspace/deep/x/y.py', 'needle\n');
      await sandbox.writeFile('/mnt/user-data/workspace/top.py', 'needle\n');
    });
    const root = '/mnt/user-data/workspace';

    it('§8.1.17 glob "src/*.js" excludes sibling directories', async () => {
      const { matches } = await sandbox.grep(root, 'needle', { glob: 'src/*.js' });
      expect(matches.map((m) => m.path)).toEqual([`${root}/src/a.js`]);
    });

    it('§8.1.18 a plain "*.py" glob matches at any depth', async () => {
      const { matches } = await sandbox.grep(root, 'needle', { glob: '*.py' });
      expect(matches.map((m) => m.path).sort()).toEqual([`${root}/deep/x/y.py`, `${root}/top.py`]);
    });

    it('§8.1.19 a scoped glob still narrows candidates with a coarse name filter', async () => {
      await sandbox.grep(root, 'needle', { glob: 'src/*.js' });
      const cmd = (fake.callsOf('run').at(-1)!.detail as { cmd: string }).cmd;
      expect(cmd).toContain("-name '*.js'");
    });

    it('§8.1.20 without a glob every match is returned', async () => {
      const { matches } = await sandbox.grep(root, 'needle');
      expect(matches).toHaveLength(4);
    });

    it('§8.1.21 a single-file root with a matching basename glob returns that file', async () => {
      const { matches } = await sandbox.grep(`${root}/top.py`, 'needle', { glob: '*.py' });
      expect(matches.map((m) => m.path)).toEqual([`${root}/top.py`]);
    });

    it('search results come back under the virtual root the caller used', async () => {
      const { paths } = await sandbox.glob(root, '*.js');
      expect(paths.sort()).toEqual([`${root}/other_dir/b.js`, `${root}/src/a.js`]);
    });
  });

  it('a literal grep passes the raw pattern to grep -F (no regex escaping)', async () => {
    await sandbox.writeFile('/mnt/user-data/workspace/l.txt', 'a.b\naxb\n');
    const { matches } = await sandbox.grep('/mnt/user-data/workspace', 'a.b', { literal: true });
    expect(matches.map((m) => m.line)).toEqual(['a.b']);
  });

  it('a command past its timeout returns the timeout notice, not an exit code', async () => {
    const out = await sandbox.executeCommand('echo started; sleep 5', { timeoutMs: 300 });
    expect(out).toContain('started');
    expect(out).toContain('Command timed out after 0.3 seconds');
    expect(out).not.toContain('Exit Code');
    expect(sandbox.isDead).toBe(false);
  });

  it('close is idempotent and later commands say the client is closed', async () => {
    await sandbox.close();
    await sandbox.close();
    expect(fake.callsOf('close')).toHaveLength(1);
    expect(await sandbox.executeCommand('true')).toBe('Error: sandbox client has been closed');
  });
});
