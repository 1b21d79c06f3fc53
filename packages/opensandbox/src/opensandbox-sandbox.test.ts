import {
  AbortedError,
  InvalidArgumentError,
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxPermissionError,
  SandboxRuntimeError,
  systemClock,
} from '@sbx/core';
import { timeoutNotice } from '@sbx/core/provider-kit';
import type { Clock } from '@sbx/core';
import { ManualClock, rejectionOf, settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenSandboxSandboxOptions } from './opensandbox-sandbox-options.js';
import { OpenSandboxSandbox } from './opensandbox-sandbox.js';
import { SANDBOX_CLOSED_MESSAGE, WRITE_FILE_MODE } from './opensandbox-sandbox-options.js';
import type { OpenSandboxRemote } from './opensandbox-sdk.js';
import { fakeExecution } from './testing/execd-output.js';
import { FakeOpenSandbox } from './testing/fake-opensandbox-sdk.js';
import { fakeApiError, fakeConnectionError } from './testing/fake-sdk-errors.js';

const WS = '/mnt/user-data/workspace';

interface Harness {
  fake: FakeOpenSandbox;
  remote: OpenSandboxRemote;
  sandbox: OpenSandboxSandbox;
  clock: ManualClock;
  evicted: unknown[];
  /** SDK calls made so far, by operation. */
  calls(op: Parameters<FakeOpenSandbox['gate']['count']>[0]): number;
}

const fakes: FakeOpenSandbox[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.dispose()));
});

async function setup(
  options: Partial<Omit<OpenSandboxSandboxOptions, 'remote' | 'clock'>> & {
    clock?: Clock;
    userland?: 'host' | 'busybox';
  } = {},
): Promise<Harness> {
  const { userland, ...sandboxOptions } = options;
  const fake = new FakeOpenSandbox({ userland: userland ?? 'host' });
  fakes.push(fake);
  const remote = await fake.sdk.Sandbox.create({
    image: 'python:3.11',
    connectionConfig: new fake.sdk.ConnectionConfig({}),
    timeoutSeconds: options.lifetimeSeconds === undefined ? 14_400 : options.lifetimeSeconds,
  });
  await fake.remote(remote.id).machine.run(`mkdir -p ${WS}`);
  const clock = new ManualClock(1_000_000);
  const evicted: unknown[] = [];
  const sandbox = new OpenSandboxSandbox('0123456789abcdef', {
    remote,
    clock,
    onTerminalFailure: (_s, error) => evicted.push(error),
    ...sandboxOptions,
  });
  return { fake, remote, sandbox, clock, evicted, calls: (op) => fake.gate.count(op) };
}

describe('OpenSandboxSandbox commands', () => {
  it('§8.8.172 output combines stdout lines, result text and stderr', async () => {
    const h = await setup();
    h.fake.respondTo('show', () => {
      const execution = fakeExecution({ stdout: 'line 1\nline 2\n', stderr: 'warn\n' });
      execution.result.push({ text: 'result text' });
      return execution;
    });
    expect(await h.sandbox.executeCommand('show')).toBe(
      'line 1\nline 2\nresult text\n\nStd Error:\nwarn\n',
    );
  });

  it('§8.8.172 env (over the static environment) and the timeout (as seconds) are forwarded', async () => {
    const h = await setup({ environment: { STATIC: 's', OVERRIDE: 'static' } });
    const out = await h.sandbox.executeCommand('echo "$STATIC $OVERRIDE $CALL"', {
      env: { CALL: 'c', OVERRIDE: 'call' },
      timeoutMs: 45_000,
    });
    expect(out).toBe('s call c\n');
    expect(h.fake.runs.at(-1)?.options).toEqual({
      timeoutSeconds: 45,
      envs: { STATIC: 's', OVERRIDE: 'call', CALL: 'c' },
    });
    // Per call only: the next command does not see it.
    expect(await h.sandbox.executeCommand('echo "[$CALL]"')).toBe('[]\n');
  });

  it('§8.8.172 a silent non-zero exit reports the exit code in the core format', async () => {
    const h = await setup();
    expect(await h.sandbox.executeCommand('exit 9')).toBe('\nExit Code: 9');
  });

  it('§8.8.172 a run without an exit code raises the specific error instead of passing for success', async () => {
    const h = await setup();
    h.fake.respondTo('no-exit', () => fakeExecution({ stdout: 'partial\n', exitCode: null }));
    h.fake.respondTo('start-failed', () =>
      fakeExecution({
        exitCode: null,
        error: { name: 'CommandExecError', value: 'fork/exec bash: no such file' },
      }),
    );
    const silent = await rejectionOf(h.sandbox.executeCommand('no-exit'));
    expect(silent).toBeInstanceOf(SandboxRuntimeError);
    expect((silent as Error).message).toBe(
      'OpenSandbox command completed without an exit code: no completion or error event',
    );
    const failed = await rejectionOf(h.sandbox.executeCommand('start-failed'));
    expect((failed as Error).message).toBe(
      'OpenSandbox command completed without an exit code: CommandExecError: fork/exec bash: no such file',
    );
  });

  it('§8.8.174 zero or negative timeouts are rejected without calling the SDK', async () => {
    const h = await setup();
    for (const timeoutMs of [0, -5, Number.NaN]) {
      const err = await rejectionOf(h.sandbox.executeCommand('true', { timeoutMs }));
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as Error).message).toContain('timeout must be positive');
    }
    expect(h.calls('run') + h.calls('renew')).toBe(0);
  });

  it('§8.8.174 invalid env keys raise before any SDK call', async () => {
    const h = await setup();
    const err = await rejectionOf(h.sandbox.executeCommand('true', { env: { 'BAD-KEY': 'x' } }));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toContain('extra_env key');
    expect((err as Error).message).toContain('POSIX');
    expect(h.calls('run') + h.calls('renew')).toBe(0);
  });

  it('execd killing the command at its limit is reported with the timeout notice and partial output', async () => {
    const h = await setup({ clock: systemClock });
    const out = await h.sandbox.executeCommand('echo partial; sleep 5', { timeoutMs: 300 });
    expect(out).toBe(`partial\n\n${timeoutNotice(0.3)}`);
  });

  it('sbx stops waiting 30 s after the limit when execd never answers', async () => {
    const h = await setup();
    h.fake.gate.pause('run');
    const pending = track(h.sandbox.executeCommand('sleep 1000', { timeoutMs: 1000 }));
    await h.fake.gate.nextCall('run');
    await h.clock.advance(30_999);
    await settle();
    expect(pending.settled).toBe(false);
    await h.clock.advance(1);
    expect(await pending.promise).toBe(timeoutNotice(1));
    expect(h.sandbox.closed).toBe(false);
  });

  it("the caller's abort ends the wait with AbortedError", async () => {
    const h = await setup();
    h.fake.gate.pause('run');
    const controller = new AbortController();
    const pending = h.sandbox.executeCommand('sleep 1000', { signal: controller.signal });
    await h.fake.gate.nextCall('run');
    controller.abort(new Error('user cancelled'));
    expect(await rejectionOf(pending)).toBeInstanceOf(AbortedError);
    expect(h.evicted).toEqual([]);
  });
});

describe('OpenSandboxSandbox lifetime renewal', () => {
  it('§8.8.173 commands renew with max(lifetime, timeout + 30 s): 150 s for a 120 s command and a 60 s lifetime', async () => {
    const h = await setup({ lifetimeSeconds: 60 });
    await h.sandbox.executeCommand('true', { timeoutMs: 120_000 });
    expect(h.fake.renewCalls()).toEqual([150]);
    await h.clock.advance(200_000);
    await h.sandbox.executeCommand('true', { timeoutMs: 5_000 });
    expect(h.fake.renewCalls()).toEqual([150, 60]);
  });

  it('§8.8.173 file operations renew with the lifetime', async () => {
    const h = await setup({ lifetimeSeconds: 60 });
    await h.sandbox.writeFile(`${WS}/a.txt`, 'x');
    await h.clock.advance(1000);
    await h.sandbox.readFile(`${WS}/a.txt`);
    expect(h.fake.renewCalls()).toEqual([60, 60]);
  });

  it('§8.8.173 a short operation cannot shorten the renewal of a command still running', async () => {
    const h = await setup({ lifetimeSeconds: 60 });
    h.fake.gate.pause('run');
    const command = h.sandbox.executeCommand('true', { timeoutMs: 120_000 });
    const held = await h.fake.gate.nextCall('run');
    expect(h.fake.renewCalls()).toEqual([150]);
    await h.clock.advance(10_000);
    // The command was granted until t0 + 150 s; the file write at t0 + 10 s must keep that.
    await h.sandbox.writeFile(`${WS}/b.txt`, 'y');
    expect(h.fake.renewCalls()).toEqual([150, 140]);
    expect(h.sandbox.expiresAt).toBe(1_000_000 + 150_000);
    await held.release();
    expect(await command).toBe('(no output)');
  });

  it('renewals reach the SDK one at a time, in the order they were asked for', async () => {
    const h = await setup({ lifetimeSeconds: 60 });
    h.fake.gate.pause('renew', { times: 1 });
    const first = h.sandbox.executeCommand('true', { timeoutMs: 120_000 });
    const held = await h.fake.gate.nextCall('renew');
    const second = h.sandbox.writeFile(`${WS}/c.txt`, 'z');
    await settle();
    expect(h.fake.gate.count('renew')).toBe(1);
    await held.release();
    await Promise.all([first, second]);
    expect(h.fake.renewCalls()).toEqual([150, 150]);
  });

  it('§8.8.173 explicit-cleanup mode never renews', async () => {
    const h = await setup({ lifetimeSeconds: null });
    await h.sandbox.executeCommand('true', { timeoutMs: 120_000 });
    await h.sandbox.writeFile(`${WS}/a.txt`, 'x');
    await h.sandbox.readFile(`${WS}/a.txt`);
    await h.sandbox.listDir(WS);
    await h.sandbox.renewLifetime();
    expect(h.calls('renew')).toBe(0);
    expect(h.sandbox.expiresAt).toBeUndefined();
  });
});

describe('OpenSandboxSandbox files', () => {
  it('§8.8.175 text, ranged read, append and binary round trips', async () => {
    const h = await setup();
    await h.sandbox.writeFile(`${WS}/deep/t.txt`, 'one\ntwo\nthree\n');
    expect(await h.sandbox.readFile(`${WS}/deep/t.txt`)).toBe('one\ntwo\nthree\n');
    expect(await h.sandbox.readFile(`${WS}/deep/t.txt`, { startLine: 2, endLine: 3 })).toBe(
      'two\nthree',
    );
    await h.sandbox.writeFile(`${WS}/deep/t.txt`, 'four\n', { append: true });
    expect(await h.sandbox.readFile(`${WS}/deep/t.txt`, { startLine: 4 })).toBe('four');
    await h.sandbox.writeFile(`${WS}/new.txt`, 'created', { append: true });
    expect(await h.sandbox.readFile(`${WS}/new.txt`)).toBe('created');
    const bytes = new Uint8Array([0, 0xff, 0x80, 10, 13, 0]);
    await h.sandbox.updateFile(`${WS}/b.bin`, bytes);
    expect(Array.from(await h.sandbox.downloadFile(`${WS}/b.bin`))).toEqual(Array.from(bytes));
    const writes = h.fake.gate
      .calls('writeFiles')
      .map((c) => (c.args[1] as { mode: number }[])[0]?.mode);
    expect(new Set(writes)).toEqual(new Set([WRITE_FILE_MODE]));
  });

  it('concurrent appends to one file are serialised (no lost update)', async () => {
    const h = await setup();
    await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        h.sandbox.writeFile(`${WS}/log.txt`, `${i}\n`, { append: true }),
      ),
    );
    const lines = (await h.sandbox.readFile(`${WS}/log.txt`)).trim().split('\n');
    expect([...lines].sort()).toEqual(['0', '1', '2', '3', '4']);
  });

  it('§8.8.175 an oversize download raises EFBIG after one stream call and closes the stream', async () => {
    const h = await setup({ maxDownloadBytes: 64 * 1024 + 10 });
    await h.sandbox.updateFile(`${WS}/big.bin`, new Uint8Array(200 * 1024));
    const err = await rejectionOf(h.sandbox.downloadFile(`${WS}/big.bin`));
    expect(err).toBeInstanceOf(SandboxFileError);
    expect((err as SandboxFileError).kind).toBe('EFBIG');
    expect(h.calls('readBytesStream')).toBe(1);
    expect(h.fake.streams).toEqual({ opened: 1, closed: 1 });
  });

  it('downloads are limited to /mnt/user-data, checked before the remote is asked', async () => {
    const h = await setup();
    const err = await rejectionOf(h.sandbox.downloadFile('/etc/passwd'));
    expect(err).toBeInstanceOf(SandboxPermissionError);
    expect(h.calls('readBytesStream') + h.calls('renew')).toBe(0);
  });

  it('reading a binary file as text is EILSEQ; a directory is EISDIR', async () => {
    const h = await setup();
    await h.sandbox.updateFile(`${WS}/bin.dat`, new Uint8Array([0xff, 0xfe, 0x00]));
    expect(
      ((await rejectionOf(h.sandbox.readFile(`${WS}/bin.dat`))) as SandboxFileError).kind,
    ).toBe('EILSEQ');
    expect(((await rejectionOf(h.sandbox.readFile(WS))) as SandboxFileError).kind).toBe('EISDIR');
  });

  it('§8.8.177 empty, relative and traversal paths (also with backslashes) are rejected before any SDK call', async () => {
    const h = await setup();
    const ops = (p: string) => [
      h.sandbox.readFile(p),
      h.sandbox.writeFile(p, 'x'),
      h.sandbox.updateFile(p, new Uint8Array(1)),
      h.sandbox.downloadFile(p),
      h.sandbox.listDir(p),
      h.sandbox.glob(p, '*'),
      h.sandbox.grep(p, 'x'),
    ];
    for (const p of ['', 'relative/file.txt']) {
      for (const op of ops(p)) expect(await rejectionOf(op)).toBeInstanceOf(InvalidArgumentError);
    }
    for (const p of [`${WS}/../../../etc/passwd`, '/mnt/user-data\\..\\..\\etc\\passwd']) {
      for (const op of ops(p)) expect(await rejectionOf(op)).toBeInstanceOf(SandboxPermissionError);
    }
    expect(h.fake.gate.calls().filter((c) => c.method !== 'create')).toEqual([]);
  });

  it('§8.8.178 a file-API 404 is a missing file and does not evict', async () => {
    const h = await setup();
    const err = await rejectionOf(h.sandbox.readFile(`${WS}/missing.txt`));
    expect(err).toBeInstanceOf(SandboxFileNotFoundError);
    expect((err as SandboxFileNotFoundError).kind).toBe('ENOENT');
    expect(h.sandbox.closed).toBe(false);
    expect(h.evicted).toEqual([]);
  });
});

describe('OpenSandboxSandbox search', () => {
  it('§8.8.176 listDir, glob and grep return /mnt/user-data paths', async () => {
    const h = await setup();
    await h.sandbox.writeFile(`${WS}/src/a.py`, 'needle\n');
    await h.sandbox.writeFile(`${WS}/src/b.txt`, 'needle\n');
    expect(await h.sandbox.listDir(WS)).toEqual([
      `${WS}/src/`,
      `${WS}/src/a.py`,
      `${WS}/src/b.txt`,
    ]);
    expect((await h.sandbox.glob(WS, '**/*.py')).paths).toEqual([`${WS}/src/a.py`]);
    expect((await h.sandbox.grep(WS, 'needle', { glob: '*.py' })).matches).toEqual([
      { path: `${WS}/src/a.py`, lineNumber: 1, line: 'needle' },
    ]);
  });

  for (const userland of ['host', 'busybox'] as const) {
    it(`§8.8.176 grep with a glob is scoped to the search root (${userland} grep)`, async () => {
      const h = await setup({ userland });
      await h.sandbox.writeFile(`${WS}/src/a.py`, 'hit\n');
      await h.sandbox.writeFile(`${WS}/other_dir/x.py`, 'hit\n');
      await h.sandbox.writeFile(`${WS}/src/b.txt`, 'hit\n');
      expect((await h.sandbox.grep(WS, 'hit', { glob: 'src/*.py' })).matches).toEqual([
        { path: `${WS}/src/a.py`, lineNumber: 1, line: 'hit' },
      ]);
      expect(
        (await h.sandbox.grep(WS, 'HIT', { glob: '*.py' })).matches.map((m) => m.path),
      ).toEqual([`${WS}/other_dir/x.py`, `${WS}/src/a.py`]);
    });
  }

  it('§8.8.176 grep drops duplicate (path, line) rows', async () => {
    const h = await setup();
    h.fake.respondTo(
      (c) => c.includes('grep'),
      () =>
        fakeExecution({
          stdout: `sbx:dir\n${WS}/a.py:3:hit\n${WS}/a.py:3:hit\n${WS}/a.py:4:hit again\n`,
        }),
    );
    expect((await h.sandbox.grep(WS, 'hit')).matches).toEqual([
      { path: `${WS}/a.py`, lineNumber: 3, line: 'hit' },
      { path: `${WS}/a.py`, lineNumber: 4, line: 'hit again' },
    ]);
  });

  it('§8.8.176 a hostile glob travels to the shell as one token', async () => {
    const h = await setup();
    await h.sandbox.writeFile(`${WS}/a.py`, 'hit\n');
    const hostile = `*.py'; touch ${WS}/pwned; echo '`;
    expect((await h.sandbox.grep(WS, 'hit', { glob: hostile })).matches).toEqual([]);
    expect((await h.sandbox.glob(WS, hostile)).paths).toEqual([]);
    expect(await h.fake.remote(h.remote.id).machine.exists(`${WS}/pwned`)).toBe(false);
  });

  it('§8.8.177 negative depth and non-positive max_results are rejected before any command', async () => {
    const h = await setup();
    const attempts = [
      h.sandbox.listDir(WS, { maxDepth: -1 }),
      h.sandbox.glob(WS, '*', { maxResults: 0 }),
      h.sandbox.grep(WS, 'x', { maxResults: -1 }),
    ];
    for (const attempt of attempts)
      expect(await rejectionOf(attempt)).toBeInstanceOf(InvalidArgumentError);
    expect(h.calls('run') + h.calls('renew')).toBe(0);
  });
});

describe('OpenSandboxSandbox terminal failures and teardown', () => {
  it('§8.8.178 a terminal renewal error evicts before the command runs', async () => {
    const h = await setup();
    h.fake.failNext('renew', fakeApiError(410, 'sandbox expired'));
    const err = await rejectionOf(h.sandbox.executeCommand('echo hi'));
    expect(err).toBeInstanceOf(SandboxRuntimeError);
    expect((err as Error).message).toContain('is gone');
    expect(h.calls('run')).toBe(0);
    expect(h.evicted).toHaveLength(1);
    expect(h.sandbox.closed).toBe(true);
    expect(((await rejectionOf(h.sandbox.readFile(`${WS}/x`))) as Error).message).toBe(
      SANDBOX_CLOSED_MESSAGE,
    );
  });

  it('§8.8.178 a 404 on the command path evicts the sandbox', async () => {
    const h = await setup();
    h.fake.failNext('run', fakeApiError(404, 'sandbox not found'));
    expect(await rejectionOf(h.sandbox.executeCommand('echo hi'))).toBeInstanceOf(
      SandboxRuntimeError,
    );
    expect(h.evicted).toHaveLength(1);
  });

  it('a refused connection is terminal on the file path too; a 500 is not terminal anywhere', async () => {
    const h = await setup();
    h.fake.failNext('run', fakeApiError(500, 'execd hiccup'));
    expect(await rejectionOf(h.sandbox.executeCommand('echo hi'))).toBeInstanceOf(
      SandboxRuntimeError,
    );
    expect(h.sandbox.closed).toBe(false);
    h.fake.failNext('readBytes', fakeConnectionError());
    expect(await rejectionOf(h.sandbox.readFile(`${WS}/x`))).toBeInstanceOf(SandboxRuntimeError);
    expect(h.evicted).toHaveLength(1);
    expect(h.sandbox.closed).toBe(true);
  });

  it('destroy deletes once, closes the transport, and concurrent calls share it', async () => {
    const h = await setup();
    await Promise.all([h.sandbox.destroy(), h.sandbox.destroy()]);
    await h.sandbox.destroy();
    expect(h.fake.remote(h.remote.id)).toMatchObject({ alive: false, kills: 1, closes: 1 });
    expect(h.sandbox.closed).toBe(true);
  });

  it('destroy of a remote that is already gone counts as deleted', async () => {
    const h = await setup();
    h.fake.vanish(h.remote.id);
    await h.sandbox.destroy();
    expect(h.fake.remote(h.remote.id).closes).toBe(1);
  });

  it('a failed delete is thrown, keeps the transport for a retry, and the retry deletes', async () => {
    const h = await setup();
    h.fake.failNext('kill', fakeApiError(500, 'try later'));
    expect(await rejectionOf(h.sandbox.destroy())).toBeInstanceOf(SandboxRuntimeError);
    expect(h.sandbox.closed).toBe(true);
    expect(h.fake.remote(h.remote.id)).toMatchObject({ alive: true, closes: 0 });
    await h.sandbox.destroy();
    expect(h.fake.remote(h.remote.id)).toMatchObject({ alive: false, kills: 1, closes: 1 });
  });

  it('healthCheck: exit 0 is healthy; exit 1, no exit code or a transport failure is not', async () => {
    const h = await setup();
    expect(await h.sandbox.healthCheck(10)).toBe(true);
    expect(h.fake.runs.at(-1)).toMatchObject({ command: 'true', options: { timeoutSeconds: 10 } });
    const stop = h.fake.respondTo('true', () => fakeExecution({ exitCode: 1 }));
    expect(await h.sandbox.healthCheck(10)).toBe(false);
    stop();
    const stopNull = h.fake.respondTo('true', () => fakeExecution({ exitCode: null }));
    expect(await h.sandbox.healthCheck(10)).toBe(false);
    stopNull();
    h.fake.failNext('run', fakeApiError(500, 'boom'));
    expect(await h.sandbox.healthCheck(10)).toBe(false);
    expect(h.calls('renew')).toBe(0);
  });
});
