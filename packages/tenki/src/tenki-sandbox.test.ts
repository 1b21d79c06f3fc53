import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxPermissionError,
  SandboxRuntimeError,
} from '@sbx/core';
import { PATH_TRAVERSAL_MESSAGE } from '@sbx/core/internal';
import { ManualClock, recordingLogger, rejectionOf, settle, track } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeTenkiClient, errnoError, sdkError } from './testing/fake-tenki-client.js';
import type { FakeTenkiSandbox } from './testing/fake-tenki-client.js';
import type { TenkiSandboxOptions } from './tenki-sandbox-options.js';
import {
  COMMAND_DEADLINE_GRACE_MS,
  MAX_DOWNLOAD_BYTES,
  SANDBOX_CLOSED_MESSAGE,
  STREAM_CHUNK_BYTES,
} from './tenki-sandbox-options.js';
import { TenkiSandbox } from './tenki-sandbox.js';

let client: FakeTenkiClient;
let vm: FakeTenkiSandbox;
let clock: ManualClock;
let logger: ReturnType<typeof recordingLogger>;
let terminal: unknown[];

beforeEach(async () => {
  // The one-shot path (a client without `start`); the live path has tests of its own below.
  client = new FakeTenkiClient({ userDataLink: false, liveCommands: false });
  vm = (await client.create({
    name: 'sbx-tenki-test',
    workspaceId: null,
    sticky: false,
    wait: false,
  })) as FakeTenkiSandbox;
  await vm.exec(['sh', '-c', 'mkdir -p /home/tenki/workspace /home/tenki/outputs']);
  client.execCalls.length = 0;
  clock = new ManualClock();
  logger = recordingLogger();
  terminal = [];
});
afterEach(async () => {
  await client.gate.releaseAll();
  await client.dispose();
});

function sandbox(options: Partial<TenkiSandboxOptions> = {}): TenkiSandbox {
  return new TenkiSandbox('0123456789abcdef', {
    remote: vm,
    clock,
    logger,
    environment: { BASE: 'base' },
    onTerminalFailure: (_sb, error) => terminal.push(error),
    ...options,
  });
}

describe('§8.7 TenkiSandbox adapter', () => {
  it('§8.7.138 /mnt/user-data[/x] maps to the HOME of the sandbox user; other paths are unchanged', () => {
    const sb = sandbox();
    expect(sb.resolvePath('/mnt/user-data')).toBe('/home/tenki');
    expect(sb.resolvePath('/mnt/user-data/workspace/a.txt')).toBe('/home/tenki/workspace/a.txt');
    expect(sb.resolvePath('/mnt/user-data-other/x')).toBe('/mnt/user-data-other/x');
    expect(sb.resolvePath('/tmp/x')).toBe('/tmp/x');
    expect(sb.virtualPath('/home/tenki')).toBe('/mnt/user-data');
    expect(sb.virtualPath('/home/tenki/outputs/r.csv')).toBe('/mnt/user-data/outputs/r.csv');
    expect(sb.virtualPath('/home/tenkix/y')).toBe('/home/tenkix/y');
    expect(sandbox({ homeDir: '/srv/data/' }).resolvePath('/mnt/user-data/a')).toBe('/srv/data/a');
  });

  it('§8.7.138 traversal is rejected before anything reaches the VM', async () => {
    const sb = sandbox();
    const before = client.gate.calls().length;
    const err = await rejectionOf(sb.readFile('/mnt/user-data/../../etc/passwd'));
    expect(err).toBeInstanceOf(SandboxPermissionError);
    expect((err as Error).message).toContain(PATH_TRAVERSAL_MESSAGE);
    expect(await rejectionOf(sb.glob('', '*'))).toBeInstanceOf(InvalidArgumentError);
    expect(client.gate.calls()).toHaveLength(before);
  });

  it('§8.7.139 download guards reject before any call; an invalid env key raises before exec', async () => {
    const sb = sandbox();
    const before = client.gate.calls().length;
    expect(await rejectionOf(sb.downloadFile('/home/tenki/workspace/a'))).toBeInstanceOf(
      SandboxPermissionError,
    );
    expect(await rejectionOf(sb.downloadFile('/mnt/user-data/../x'))).toBeInstanceOf(
      SandboxPermissionError,
    );
    const err = await rejectionOf(sb.executeCommand('echo', { env: { '1X': 'v' } }));
    expect((err as Error).message).toContain('extra_env key');
    expect(client.gate.calls()).toHaveLength(before);
  });

  it('§8.7.140 output verbatim; env merged; timeout forwarded; argv `sh -lc <cmd>`; no cwd', async () => {
    const sb = sandbox();
    expect(await sb.executeCommand('echo ok')).toBe('ok\n');
    expect(
      await sb.executeCommand('echo "$BASE,$EXTRA"', { env: { EXTRA: 'x' }, timeoutMs: 7_000 }),
    ).toBe('base,x\n');
    const call = client.execCalls[1]!;
    expect(call.argv).toEqual(['sh', '-lc', 'echo "$BASE,$EXTRA"']);
    expect(call.options.env).toEqual({ BASE: 'base', EXTRA: 'x' });
    expect(call.options.timeoutSeconds).toBe(7);
    expect(call.options).not.toHaveProperty('cwd');
  });

  it('§8.7.140 a command that outlives its timeout comes back as a timeout notice', async () => {
    const sb = sandbox();
    client.gate.pause('exec', { times: 1 });
    const running = track(sb.executeCommand('sleep 60', { timeoutMs: 1_000 }));
    const call = await client.gate.nextCall('exec');
    await clock.advance(1_000 + COMMAND_DEADLINE_GRACE_MS - 1);
    await settle();
    expect(running.settled).toBe(false);
    await clock.advance(1);
    expect(await running.promise).toMatch(/^Command timed out after 1 second and was terminated\./);
    call.fail(new Error('late'));
  });

  it('§8.7.141 failures are typed errors; a closed adapter says "sandbox has been closed"', async () => {
    const sb = sandbox();
    vm.execFailures.push(new Error('quota exceeded'));
    const err = await rejectionOf(sb.executeCommand('echo'));
    expect(err).toBeInstanceOf(SandboxRuntimeError);
    expect((err as Error).message).toBe('quota exceeded');
    await sb.terminate();
    expect(await rejectionOf(sb.executeCommand('echo'))).toMatchObject({
      message: SANDBOX_CLOSED_MESSAGE,
    });
    expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('§8.7.142 named SDK errors and connection errors are terminal; others are not, and exec is never retried', async () => {
    const sb = sandbox();
    for (const error of [new Error('UNAVAILABLE: Socket closed'), new Error('boom')]) {
      vm.execFailures.push(error);
      const before = client.execCalls.length;
      await rejectionOf(sb.executeCommand('echo'));
      expect(client.execCalls.length - before).toBe(1);
    }
    expect(terminal).toEqual([]);
    for (const error of [
      sdkError('SessionTerminatedError'),
      sdkError('SessionNotFoundError'),
      sdkError('InvalidStateError'),
      sdkError('StreamClosedError'),
      sdkError('EOFError'),
      errnoError('ECONNRESET'),
      errnoError('EPIPE'),
      Object.assign(new Error('wrapped'), { cause: errnoError('ECONNREFUSED') }),
    ]) {
      const fresh = sandbox();
      vm.execFailures.push(error);
      await rejectionOf(fresh.executeCommand('echo'));
      expect(fresh.closed).toBe(true);
    }
    expect(terminal).toHaveLength(8);
  });

  it('§8.7.143 terminate is idempotent; a failed termination can be retried; a terminal error counts as done', async () => {
    const sb = sandbox();
    vm.terminateFailures.push(new Error('UNAVAILABLE'));
    expect(await rejectionOf(sb.terminate())).toMatchObject({ message: 'UNAVAILABLE' });
    expect(sb.closed).toBe(false);
    expect(await sb.executeCommand('echo still')).toBe('still\n');
    await sb.terminate();
    await sb.terminate();
    expect(vm.terminateCalls).toBe(2);
    expect(sb.terminated).toBe(true);

    const other = await client.create({
      name: 'n2',
      workspaceId: null,
      sticky: false,
      wait: false,
    });
    const sb2 = new TenkiSandbox('x', { remote: other });
    (other as FakeTenkiSandbox).terminateFailures.push(sdkError('SessionNotFoundError'));
    await sb2.terminate();
    expect(sb2.closed).toBe(true);
  });

  it('close() releases nothing remote: it never terminates the microVM', async () => {
    const sb = sandbox();
    await sb.close();
    expect(vm.terminateCalls).toBe(0);
    expect(await sb.executeCommand('echo alive')).toBe('alive\n');
  });

  it('§8.7.144 text round trip; writes create parent directories; a 2 MB binary goes in several frames', async () => {
    const sb = sandbox();
    await sb.writeFile('/mnt/user-data/workspace/deep/er/a.txt', 'héllo\nworld\n');
    expect(await sb.readFile('/mnt/user-data/workspace/deep/er/a.txt')).toBe('héllo\nworld\n');
    expect(await sb.readFile('/mnt/user-data/workspace/deep/er/a.txt', { startLine: 2 })).toBe(
      'world',
    );
    const bytes = new Uint8Array(2 * 1024 * 1024 + 5).map((_, i) => (i * 131) % 256);
    await sb.updateFile('/mnt/user-data/outputs/blob.bin', bytes);
    const write = vm.writes.at(-1)!;
    expect(write.path).toBe('/home/tenki/outputs/blob.bin');
    expect(write.frames).toBe(Math.ceil(bytes.length / STREAM_CHUNK_BYTES));
    expect(write.frames).toBeGreaterThan(1);
    expect(
      Buffer.from(await sb.downloadFile('/mnt/user-data/outputs/blob.bin')).equals(
        Buffer.from(bytes),
      ),
    ).toBe(true);
    expect(client.execCalls).toEqual([]);
  });

  it('§8.7.145 append accumulates and creates a missing file', async () => {
    const sb = sandbox();
    await sb.writeFile('/mnt/user-data/workspace/new/log.txt', 'a\n', { append: true });
    await Promise.all([
      sb.writeFile('/mnt/user-data/workspace/new/log.txt', 'b\n', { append: true }),
      sb.writeFile('/mnt/user-data/workspace/new/log.txt', 'c\n', { append: true }),
    ]);
    expect(await sb.readFile('/mnt/user-data/workspace/new/log.txt')).toBe('a\nb\nc\n');
  });

  it('§8.7.146 a missing file raises a typed not-found error from readFile and downloadFile', async () => {
    const sb = sandbox();
    expect(await rejectionOf(sb.readFile('/mnt/user-data/workspace/none'))).toBeInstanceOf(
      SandboxFileNotFoundError,
    );
    expect(await rejectionOf(sb.downloadFile('/mnt/user-data/workspace/none'))).toBeInstanceOf(
      SandboxFileNotFoundError,
    );
    expect(await rejectionOf(sb.readFile('/mnt/user-data/workspace'))).toMatchObject({
      kind: 'EISDIR',
    });
    await sb.updateFile('/mnt/user-data/workspace/bin', new Uint8Array([0xc3, 0x28]));
    expect(await rejectionOf(sb.readFile('/mnt/user-data/workspace/bin'))).toMatchObject({
      kind: 'EILSEQ',
    });
    expect(terminal).toEqual([]);
  });

  it('§8.7.147 the download cap counts received bytes (EFBIG) and does not evict', async () => {
    const sb = sandbox();
    await vm.exec([
      'sh',
      '-c',
      `truncate -s ${MAX_DOWNLOAD_BYTES + 1} /home/tenki/outputs/huge.bin`,
    ]);
    const err = await rejectionOf(sb.downloadFile('/mnt/user-data/outputs/huge.bin'));
    expect(err).toBeInstanceOf(SandboxFileError);
    expect((err as SandboxFileError).kind).toBe('EFBIG');
    expect(terminal).toEqual([]);
    expect(sb.closed).toBe(false);
  });

  it('§8.7.147 a mid-stream connection error and a terminal fs error evict', async () => {
    const sb = sandbox();
    await sb.updateFile('/mnt/user-data/outputs/f.bin', new Uint8Array(500_000));
    vm.streamFailure = { afterBytes: 70_000, error: errnoError('ECONNRESET') };
    expect(await rejectionOf(sb.downloadFile('/mnt/user-data/outputs/f.bin'))).toBeInstanceOf(
      SandboxRuntimeError,
    );
    expect(terminal).toHaveLength(1);

    const sb2 = sandbox();
    vm.fsFailures.push(sdkError('SessionTerminatedError'));
    expect(await rejectionOf(sb2.readFile('/mnt/user-data/outputs/f.bin'))).toBeInstanceOf(
      SandboxRuntimeError,
    );
    expect(terminal).toHaveLength(2);

    const sb3 = sandbox();
    vm.fsFailures.push(new Error('UNAVAILABLE: Socket closed'));
    expect(await rejectionOf(sb3.readFile('/mnt/user-data/outputs/f.bin'))).toMatchObject({
      kind: 'EIO',
    });
    expect(terminal).toHaveLength(2);
  });

  it('§8.7.148 listDir, glob and grep return virtual paths that the file calls accept', async () => {
    const sb = sandbox();
    await sb.writeFile('/mnt/user-data/workspace/src/app.js', 'const a = 1;\n// TODO fix\n');
    await sb.writeFile('/mnt/user-data/workspace/notes.md', 'todo: later\n');
    expect(await sb.listDir('/mnt/user-data/workspace')).toEqual([
      '/mnt/user-data/workspace/notes.md',
      '/mnt/user-data/workspace/src/',
      '/mnt/user-data/workspace/src/app.js',
    ]);
    const { paths } = await sb.glob('/mnt/user-data', '**/*.js');
    expect(paths).toEqual(['/mnt/user-data/workspace/src/app.js']);
    expect(await sb.readFile(paths[0]!, { startLine: 2 })).toBe('// TODO fix');
    const { matches } = await sb.grep('/mnt/user-data/workspace', 'todo');
    expect(matches).toEqual([
      { path: '/mnt/user-data/workspace/notes.md', lineNumber: 1, line: 'todo: later' },
      { path: '/mnt/user-data/workspace/src/app.js', lineNumber: 2, line: '// TODO fix' },
    ]);
    expect(await rejectionOf(sb.glob('/mnt/user-data/nope', '*'))).toMatchObject({
      baseMessage: 'No such file or directory: /mnt/user-data/nope',
      kind: 'ENOENT',
    });
  });

  it('§8.7.149 search flags: scoped grep glob, -H, single-file root, literal -F with -i, case-sensitive -E', async () => {
    const sb = sandbox();
    await sb.writeFile('/mnt/user-data/workspace/src/x.js', 'Hit\n');
    await sb.writeFile('/mnt/user-data/workspace/other_dir/x.js', 'Hit\n');
    const scoped = await sb.grep('/mnt/user-data/workspace', 'hit', { glob: 'src/*.js' });
    expect(scoped.matches.map((m) => m.path)).toEqual(['/mnt/user-data/workspace/src/x.js']);
    const lastCommand = () => String(client.execCalls.at(-1)?.argv[2]);
    expect(lastCommand()).toMatch(/grep [^|]*-H/);
    const single = await sb.grep('/mnt/user-data/workspace/src/x.js', 'hit', { glob: '*.js' });
    expect(single.matches.map((m) => m.lineNumber)).toEqual([1]);
    await sb.grep('/mnt/user-data/workspace', 'a.b', { literal: true });
    expect(lastCommand()).toMatch(/-i -F/);
    await sb.grep('/mnt/user-data/workspace', 'Hit', { caseSensitive: true });
    expect(lastCommand()).not.toMatch(/ -i /);
    expect(lastCommand()).toMatch(/ -E /);
    await sb.glob('/mnt/user-data/workspace', 'src', { includeDirs: true });
    expect(lastCommand()).toContain('-type d');
    await sb.listDir('/mnt/user-data/workspace', { maxDepth: 1 });
    expect(lastCommand()).toContain('-maxdepth 1');
  });

  it('liveness checks are bounded by their timeout on both sides', async () => {
    const sb = sandbox();
    expect(await sb.healthCheck(10)).toBe(true);
    client.gate.pause('exec', { times: 1 });
    const checking = track(sb.healthCheck(3));
    const call = await client.gate.nextCall('exec');
    expect(call.args[0]).toMatchObject({ options: { timeoutSeconds: 3 } });
    await clock.advance(3_000);
    expect(await checking.promise).toBe(false);
    call.fail(new Error('late'));
  });
});
