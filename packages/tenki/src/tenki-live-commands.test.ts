import { ManualClock, recordingLogger, rejectionOf, settle, track } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeTenkiClient } from './testing/fake-tenki-client.js';
import type { FakeTenkiSandbox } from './testing/fake-tenki-client.js';
import { COMMAND_DEADLINE_GRACE_MS } from './tenki-sandbox-options.js';
import { TenkiSandbox } from './tenki-sandbox.js';

/*
 * A client with the SDKs' `start` (live commands): the adapter streams, feeds input, signals, and
 * runs background processes on it. The one-shot path is `tenki-sandbox.test.ts`.
 */
let client: FakeTenkiClient;
let vm: FakeTenkiSandbox;
let clock: ManualClock;
let terminal: unknown[];

beforeEach(async () => {
  client = new FakeTenkiClient({ userDataLink: false });
  vm = (await client.create({
    name: 'sbx-tenki-live',
    workspaceId: null,
    sticky: false,
    wait: false,
  })) as FakeTenkiSandbox;
  client.execCalls.length = 0;
  clock = new ManualClock();
  terminal = [];
});
afterEach(async () => {
  await client.gate.releaseAll();
  await client.dispose();
});

const sandbox = (commandTimeoutSeconds?: number) =>
  new TenkiSandbox('0123456789abcdef', {
    remote: vm,
    clock,
    logger: recordingLogger(),
    environment: { BASE: 'base' },
    commandTimeoutSeconds,
    onTerminalFailure: (_sb, error) => terminal.push(error),
  });

describe('TenkiSandbox on a client with live commands', () => {
  it('says so in its capabilities; a client without `start` stays one-shot', async () => {
    expect(sandbox().capabilities).toEqual({
      streaming: true,
      stdin: true,
      backgroundProcesses: true,
    });
    const oneShot = new FakeTenkiClient({ liveCommands: false });
    const remote = await oneShot.create({
      name: 'x',
      workspaceId: null,
      sticky: false,
      wait: false,
    });
    const plain = new TenkiSandbox('0123456789abcdef', { remote });
    expect(plain.capabilities.backgroundProcesses).toBe(false);
    expect(await rejectionOf(plain.processes.start('true'))).toMatchObject({
      code: 'CAPABILITY_NOT_SUPPORTED',
    });
    await oneShot.dispose();
  });

  it('runs `sh -lc <cmd>` with the merged env, feeds stdin, and forwards the limit', async () => {
    const result = await sandbox().exec('read x; echo "$BASE $x"', {
      stdin: 'typed\n',
      timeoutMs: 2_500,
    });
    expect(result).toMatchObject({ exitCode: 0, stdout: 'base typed\n' });
    expect(client.execCalls[0]).toMatchObject({
      argv: ['sh', '-lc', 'read x; echo "$BASE $x"'],
      options: { env: { BASE: 'base' }, timeoutSeconds: 3 },
    });
  });

  it('the configured default limit applies; without one nothing is forwarded', async () => {
    await sandbox(600).exec('true');
    expect(client.execCalls[0]?.options.timeoutSeconds).toBe(600);
    await sandbox().exec('true');
    expect(client.execCalls[1]?.options).not.toHaveProperty('timeoutSeconds');
  });

  it('a start the service never answers ends as a timeout at the limit plus the grace', async () => {
    const sb = sandbox();
    client.gate.pause('start', { times: 1 });
    const running = track(sb.executeCommand('sleep 60', { timeoutMs: 1_000 }));
    const call = await client.gate.nextCall('start');
    await clock.advance(1_000 + COMMAND_DEADLINE_GRACE_MS - 1);
    await settle();
    expect(running.settled).toBe(false);
    await clock.advance(1);
    expect(await running.promise).toMatch(/^Command timed out after 1 second and was terminated\./);
    call.fail(new Error('late'));
  });

  it('a background process is signalled through the client and ends when the adapter closes', async () => {
    const sb = sandbox();
    const server = await sb.processes.start(
      'trap "echo bye; exit 0" TERM; echo up; sleep 300 & wait',
    );
    await server.kill('SIGTERM');
    await server.wait();
    expect(vm.signals).toEqual(['SIGTERM']);
    const other = await sb.processes.start('sleep 300');
    await sb.close();
    expect(other.info().status).toBe('exited');
    expect(vm.signals).toEqual(['SIGTERM', 'SIGKILL']);
  });

  it('a session that is gone while a command starts evicts the sandbox', async () => {
    const sb = sandbox();
    vm.kill();
    expect(await rejectionOf(sb.exec('true'))).toMatchObject({ code: 'SANDBOX_RUNTIME' });
    expect(terminal).toHaveLength(1);
    expect(sb.closed).toBe(true);
  });
});
