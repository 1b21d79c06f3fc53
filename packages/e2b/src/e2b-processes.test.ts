import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@sbx/core';
import type { E2BRemoteSandbox } from './e2b-client.js';
import {
  BACKGROUND_PROCESS_ENV,
  E2BProcessLauncher,
  pidOfProcessId,
  runWithStdin,
} from './e2b-processes.js';
import { E2BSandbox } from './e2b-sandbox.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

let fake: FakeE2BClient | undefined;
afterEach(async () => {
  await fake?.dispose();
  fake = undefined;
});

async function twoClients() {
  fake = new FakeE2BClient();
  const remote = await fake.create({ template: 'base', metadata: {} });
  const other = await fake.connect(remote.sandboxId);
  return {
    fake,
    remote,
    mine: new E2BSandbox(remote.sandboxId, remote),
    theirs: new E2BSandbox(remote.sandboxId, other),
  };
}

describe('E2B background processes seen from another client', () => {
  it('names a process p<pid>, envd’s own name for it', async () => {
    const { mine } = await twoClients();
    const handle = await mine.processes.start('sleep 30');
    const pid = pidOfProcessId(handle.id);
    const listed = await mine.client!.commands.list();
    expect(listed.find((p) => p.pid === pid)?.envs[BACKGROUND_PROCESS_ENV]).toBe('1');
    await handle.kill('SIGKILL');
  });

  it('leaves alone what envd runs that is no background process of ours', async () => {
    const { remote, theirs } = await twoClients();
    // A foreground command of another client, or anything else started through envd.
    const foreign = await remote.commands.run('sleep 30', { background: true });
    expect(await theirs.processes.list()).toEqual([]);
    expect(await theirs.processes.get(`p${foreign.pid}`)).toBeUndefined();
    await remote.commands.kill(foreign.pid);
  });

  it('never sends a malformed id to envd', async () => {
    const { fake: control, theirs } = await twoClients();
    for (const id of ['p0', 'p01', '1234', 'p-1', 'p99999999999', 'p1 ', 'P12', 'p1e3']) {
      expect(await theirs.processes.get(id)).toBeUndefined();
    }
    expect(control.gate.count('listProcesses')).toBe(0);
    expect(control.gate.count('connectProcess')).toBe(0);
  });

  it('list() on another client lists envd once and connects to each process once', async () => {
    const { fake: control, mine, theirs } = await twoClients();
    const started = await Promise.all(['a', 'b', 'c'].map(() => mine.processes.start('sleep 30')));
    const before = control.gate.count('listProcesses');
    const listed = await theirs.processes.list();
    expect(listed.map((p) => p.id).sort()).toEqual(started.map((h) => h.id).sort());
    expect(control.gate.count('listProcesses') - before).toBe(1);
    expect(control.gate.count('connectProcess')).toBe(3);
    for (const handle of started) await handle.kill('SIGKILL');
  });

  it('answers an ended process with undefined', async () => {
    const { mine, theirs } = await twoClients();
    const handle = await mine.processes.start('true');
    await handle.wait();
    expect(await theirs.processes.get(handle.id)).toBeUndefined();
  });
});

describe('pidOfProcessId', () => {
  it('takes p<pid> within the kernel pid range only', () => {
    expect(pidOfProcessId('p1')).toBe(1);
    expect(pidOfProcessId('p2147483647')).toBe(2147483647);
    expect(pidOfProcessId('p2147483648')).toBeUndefined();
    expect(pidOfProcessId('p0')).toBeUndefined();
  });
});

describe('E2BProcessLauncher.discover', () => {
  it('looks at no more than 64 marked processes, however many envd lists', async () => {
    const listed = Array.from({ length: 500 }, (_, i) => ({
      pid: i + 1,
      cmd: '/bin/bash',
      args: ['-l', '-c', 'sleep 1'],
      envs: { [BACKGROUND_PROCESS_ENV]: '1' },
    }));
    const launcher = new E2BProcessLauncher({
      client: () => ({ commands: { list: async () => listed } }) as unknown as E2BRemoteSandbox,
      resolvePath: (p) => p,
      remoteError: (e) => e as Error,
      logger: silentLogger,
    });
    const ids = await launcher.discover();
    expect(ids).toHaveLength(64);
    expect(ids[0]).toBe('p1');
  });
});

describe('a foreground command with input whose send hears "process not found"', () => {
  const sdkError = (name: string, message: string, extra: object = {}) =>
    Object.assign(new Error(message), { name }, extra);
  /** The SDK port as far as runWithStdin uses it: a handle whose end is `ended`. */
  function remote(sendError: Error, ended: () => Promise<never> | Promise<object>) {
    const calls: string[] = [];
    const commands = {
      run: async () => ({ pid: 7, wait: ended, disconnect: async () => {} }),
      sendStdin: async () => {
        calls.push('sendStdin');
        throw sendError;
      },
      closeStdin: async () => {
        calls.push('closeStdin');
      },
      kill: async () => false,
    };
    return { client: { commands } as unknown as E2BRemoteSandbox, calls };
  }

  it('a process the handle reports no end for is genuinely missing: the send’s error stands', async () => {
    const notFound = sdkError('NotFoundError', 'process with pid 7 not found');
    const { client } = remote(notFound, () =>
      Promise.reject(sdkError('SandboxError', 'stream ended without an end event')),
    );
    await expect(runWithStdin(client, 'cat', {}, 'x')).rejects.toBe(notFound);
  });

  it('a command that ended meanwhile reports its end: its exit, non-zero included', async () => {
    const notFound = sdkError('NotFoundError', 'process with pid 7 not found');
    const exited = sdkError('CommandExitError', 'exit status 3', {
      exitCode: 3,
      stdout: '',
      stderr: '',
    });
    const { client } = remote(notFound, () => Promise.reject(exited));
    await expect(runWithStdin(client, 'exit 3', {}, 'x')).rejects.toBe(exited);
    const late = sdkError('TimeoutError', "command ran past its 'timeoutMs'");
    const timedOut = remote(notFound, () => Promise.reject(late));
    await expect(runWithStdin(timedOut.client, 'sleep 9', {}, 'x')).rejects.toBe(late);
    const ok = remote(notFound, async () => ({ exitCode: 0, stdout: '', stderr: '' }));
    await expect(runWithStdin(ok.client, 'true', {}, 'x')).resolves.toEqual({
      exitCode: 0,
      stdout: '',
      stderr: '',
    });
  });

  it('any other failure of the send is not taken for an early exit', async () => {
    const gone = sdkError('SandboxNotFoundError', 'Sandbox is probably not running anymore');
    const { client, calls } = remote(gone, async () => ({ exitCode: 0, stdout: '', stderr: '' }));
    await expect(runWithStdin(client, 'true', {}, 'x')).rejects.toBe(gone);
    expect(calls).toEqual(['sendStdin']);
  });
});
