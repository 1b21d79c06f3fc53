import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxPermissionError,
  SandboxRuntimeError,
  isSbxError,
} from '@sbx/core';
import { PATH_TRAVERSAL_MESSAGE } from '@sbx/core/internal';
import { ManualClock, recordingLogger, rejectionOf, settle, track } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BASE64_CHUNK_CHARS,
  BoxliteSandbox,
  COMMAND_DEADLINE_GRACE_MS,
  MAX_TRANSFER_BYTES,
  SANDBOX_CLOSED_MESSAGE,
} from './boxlite-sandbox.js';
import type { BoxliteSandboxOptions } from './boxlite-sandbox.js';
import { FakeBoxliteRuntime } from './testing/fake-boxlite-runtime.js';
import type { FakeBox } from './testing/fake-boxlite-runtime.js';

let runtime: FakeBoxliteRuntime;
let box: FakeBox;
let clock: ManualClock;
let logger: ReturnType<typeof recordingLogger>;
let terminal: unknown[];

beforeEach(async () => {
  runtime = new FakeBoxliteRuntime();
  box = (await runtime.create({ name: 'sbx-boxlite-test' })) as FakeBox;
  await box.exec('sh', ['-c', 'mkdir -p /mnt/user-data/workspace'], undefined);
  runtime.execCalls.length = 0;
  clock = new ManualClock();
  logger = recordingLogger();
  terminal = [];
});
afterEach(async () => {
  await runtime.gate.releaseAll();
  await runtime.dispose();
});

function sandbox(options: Partial<BoxliteSandboxOptions> = {}): BoxliteSandbox {
  return new BoxliteSandbox('0123456789abcdef', {
    box,
    clock,
    logger,
    environment: { BASE: 'base' },
    onTerminalFailure: (_sb, error) => terminal.push(error),
    ...options,
  });
}

describe('§8.6 BoxliteSandbox adapter', () => {
  it('§8.6.113 the traversal guard accepts normal and relative paths and rejects `..` and empty paths', async () => {
    const sb = sandbox();
    await sb.writeFile('/mnt/user-data/workspace/a.txt', 'abs');
    await sb.writeFile('relative.txt', 'rel');
    expect(await sb.readFile('relative.txt')).toBe('rel');
    const execs = runtime.execCalls.length;
    for (const bad of ['/mnt/user-data/../etc/passwd', '..\\secret', 'a/../../b']) {
      const err = await rejectionOf(sb.readFile(bad));
      expect(err).toBeInstanceOf(SandboxPermissionError);
      expect((err as Error).message).toContain(PATH_TRAVERSAL_MESSAGE);
    }
    expect(await rejectionOf(sb.writeFile('', 'x'))).toBeInstanceOf(InvalidArgumentError);
    expect(runtime.execCalls.length).toBe(execs);
  });

  it('§8.6.114 downloadFile refuses paths outside /mnt/user-data and traversal without running a command', async () => {
    const sb = sandbox();
    for (const bad of ['/etc/hostname', '/mnt/user-data-other/x', '/mnt/user-data/../etc/passwd']) {
      const err = await rejectionOf(sb.downloadFile(bad));
      expect(err).toBeInstanceOf(SandboxPermissionError);
      expect((err as SandboxPermissionError).kind).toBe('EACCES');
    }
    expect(runtime.execCalls).toEqual([]);
  });

  it('§8.6.115 an invalid env key raises before anything runs', async () => {
    const err = await rejectionOf(sandbox().executeCommand('echo hi', { env: { 'A-B': 'x' } }));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toContain('extra_env key');
    expect((err as Error).message).toContain('POSIX');
    expect(runtime.execCalls).toEqual([]);
  });

  it('§8.6.116 runs `sh -lc <command>` with the static env under the per-call env', async () => {
    const out = await sandbox().executeCommand('echo "$BASE $EXTRA"', {
      env: { EXTRA: 'extra', BASE: 'over' },
    });
    expect(out).toBe('over extra\n');
    expect(runtime.execCalls[0]).toMatchObject({
      command: 'sh',
      args: ['-lc', 'echo "$BASE $EXTRA"'],
      env: { BASE: 'over', EXTRA: 'extra' },
    });
  });

  it('§8.6.116 the command timeout goes to the VM exec and bounds the wait itself', async () => {
    const sb = sandbox();
    runtime.gate.pause('start', { times: 1 });
    const running = track(sb.executeCommand('sleep 100', { timeoutMs: 2_500 }));
    const call = await runtime.gate.nextCall('start');
    expect(call.args[0]).toMatchObject({ options: { timeoutSecs: 3 } });
    await clock.advance(2_500 + COMMAND_DEADLINE_GRACE_MS - 1);
    await settle();
    expect(running.settled).toBe(false);
    await clock.advance(1);
    const out = await running.promise;
    expect(out).toMatch(/^Command timed out after 2\.5 seconds and was terminated\./);
    expect(clock.pendingTimers).toBe(0);
    call.fail(new Error('late'));
  });

  it('§8.6.116 the configured default timeout applies when the call gives none', async () => {
    await sandbox({ commandTimeoutSeconds: 600 }).executeCommand('true');
    expect(runtime.execCalls[0]?.options.timeoutSecs).toBe(600);
  });

  it('without a configured timeout a command runs as long as it takes (no limit to the VM)', async () => {
    await sandbox().executeCommand('true');
    expect(runtime.execCalls[0]?.options).not.toHaveProperty('timeoutSecs');
  });

  it('stops waiting when the caller aborts, and kills the execution', async () => {
    const sb = sandbox();
    runtime.gate.pause('start', { times: 1 });
    const controller = new AbortController();
    const running = sb.executeCommand('sleep 100', { signal: controller.signal });
    const call = await runtime.gate.nextCall('start');
    controller.abort();
    expect(isSbxError(await rejectionOf(running)) && 'aborted').toBe('aborted');
    // The VM starts it after the caller left: it is killed as soon as it runs.
    await call.release();
    await settle();
    expect(box.signals).toEqual(['SIGKILL']);
  });

  it('§8.6.117 readFile reads the file byte-exactly and supports line ranges', async () => {
    const sb = sandbox();
    await sb.writeFile('/mnt/user-data/workspace/r.txt', 'one\r\ntwo\nthree\n');
    expect(await sb.readFile('/mnt/user-data/workspace/r.txt')).toBe('one\r\ntwo\nthree\n');
    expect(await sb.readFile('/mnt/user-data/workspace/r.txt', { startLine: 2, endLine: 3 })).toBe(
      'two\nthree',
    );
    expect(await sb.readFile('/mnt/user-data/workspace/r.txt', { startLine: 9 })).toBe('');
  });

  it('§8.6.117 readFile classifies missing files, directories and undecodable bytes', async () => {
    const sb = sandbox();
    expect(await rejectionOf(sb.readFile('/mnt/user-data/nope.txt'))).toMatchObject({
      kind: 'ENOENT',
    });
    expect(await rejectionOf(sb.readFile('/mnt/user-data/workspace'))).toMatchObject({
      kind: 'EISDIR',
    });
    await sb.updateFile('/mnt/user-data/workspace/bin', new Uint8Array([0xff, 0xfe, 0x00, 0x80]));
    expect(await rejectionOf(sb.readFile('/mnt/user-data/workspace/bin'))).toMatchObject({
      kind: 'EILSEQ',
    });
    await sb.writeFile('/mnt/user-data/workspace/file', 'x');
    expect(await rejectionOf(sb.readFile('/mnt/user-data/workspace/file/child'))).toMatchObject({
      kind: 'ENOENT',
    });
  });

  it('transfers content larger than one base64 chunk intact, in several commands', async () => {
    const sb = sandbox();
    const bytes = new Uint8Array(BASE64_CHUNK_CHARS * 2);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) % 256;
    await sb.updateFile('/mnt/user-data/outputs/big.bin', bytes);
    const writes = runtime.execCalls.filter((c) => String(c.args[1]).includes('base64 -d'));
    expect(writes.length).toBe(Math.ceil((Math.ceil(bytes.length / 3) * 4) / BASE64_CHUNK_CHARS));
    expect(writes.every((c) => String(c.args[1]).length < 128 * 1024)).toBe(true);
    expect(
      Buffer.from(await sb.downloadFile('/mnt/user-data/outputs/big.bin')).equals(
        Buffer.from(bytes),
      ),
    ).toBe(true);
    await sb.writeFile('/mnt/user-data/outputs/empty.txt', '');
    expect(await sb.readFile('/mnt/user-data/outputs/empty.txt')).toBe('');
  });

  it('refuses to download a file over 100 MiB (EFBIG) without transferring it', async () => {
    const sb = sandbox();
    await sb.executeCommand(
      `truncate -s ${MAX_TRANSFER_BYTES + 1} /mnt/user-data/workspace/huge.bin`,
    );
    const err = await rejectionOf(sb.downloadFile('/mnt/user-data/workspace/huge.bin'));
    expect(err).toBeInstanceOf(SandboxFileError);
    expect((err as SandboxFileError).kind).toBe('EFBIG');
    expect(terminal).toEqual([]);
  });

  it('§8.6.118 grep always passes -H', async () => {
    const sb = sandbox();
    await sb.writeFile('/mnt/user-data/workspace/only.txt', 'needle\n');
    const { matches } = await sb.grep('/mnt/user-data/workspace/only.txt', 'needle');
    expect(matches).toEqual([
      { path: '/mnt/user-data/workspace/only.txt', lineNumber: 1, line: 'needle' },
    ]);
    const command = String(runtime.execCalls.at(-1)?.args[1]);
    expect(command).toMatch(/grep [^|]*-H/);
  });

  it('§8.6.119 a terminal transport error is thrown and reported; regular and retryable errors are not', async () => {
    const sb = sandbox();
    box.failNextExec(new Error('engine: command failed: exit status 2'));
    expect(await rejectionOf(sb.executeCommand('x'))).toBeInstanceOf(SandboxRuntimeError);
    box.failNextExec(new Error('vsock transport not ready, retry later'));
    expect(await rejectionOf(sb.executeCommand('x'))).toMatchObject({
      message: 'vsock transport not ready, retry later',
    });
    expect(terminal).toEqual([]);
    expect(sb.closed).toBe(false);
    box.failNextExec(new Error('vsock disconnected'));
    const err = await rejectionOf(sb.executeCommand('x'));
    expect(err).toBeInstanceOf(SandboxRuntimeError);
    expect((err as Error).message).toBe('vsock disconnected');
    expect(terminal).toHaveLength(1);
    expect(sb.closed).toBe(true);
  });

  it('§8.6.119 connection errno codes are terminal too', async () => {
    const sb = sandbox();
    box.failNextExec(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    await rejectionOf(sb.readFile('/mnt/user-data/workspace/x'));
    expect(terminal).toHaveLength(1);
  });

  it('§8.6.119 the marker lists can be overridden', async () => {
    const sb = sandbox({ terminalMarkers: { terminal: ['hypervisor gone'], retryable: ['soon'] } });
    box.failNextExec(new Error('vsock disconnected'));
    await rejectionOf(sb.executeCommand('x'));
    expect(terminal).toEqual([]);
    box.failNextExec(new Error('hypervisor gone, back soon'));
    await rejectionOf(sb.executeCommand('x'));
    expect(terminal).toEqual([]);
    box.failNextExec(new Error('hypervisor gone'));
    await rejectionOf(sb.executeCommand('x'));
    expect(terminal).toHaveLength(1);
  });

  it('§8.6.120 a closed box answers "sandbox has been closed" without an error log', async () => {
    const sb = sandbox();
    await sb.stop();
    const err = await rejectionOf(sb.executeCommand('echo hi'));
    expect(err).toBeInstanceOf(SandboxRuntimeError);
    expect((err as Error).message).toBe(SANDBOX_CLOSED_MESSAGE);
    expect(await rejectionOf(sb.readFile('/mnt/user-data/workspace/a'))).toMatchObject({
      message: SANDBOX_CLOSED_MESSAGE,
    });
    expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(box.running).toBe(false);
    expect(await sb.healthCheck(5)).toBe(false);
  });

  it('health checks bound the wait by the same timeout they give the VM', async () => {
    const sb = sandbox();
    expect(await sb.healthCheck(5)).toBe(true);
    runtime.gate.pause('exec', { times: 1 });
    const checking = track(sb.healthCheck(2));
    const call = await runtime.gate.nextCall('exec');
    expect(call.args[0]).toMatchObject({ options: { timeoutSecs: 2 } });
    await clock.advance(1_999);
    await settle();
    expect(checking.settled).toBe(false);
    await clock.advance(1);
    expect(await checking.promise).toBe(false);
    call.fail(new Error('late'));
    expect(terminal).toEqual([]);
  });
});
