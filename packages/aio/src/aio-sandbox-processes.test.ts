import { describeProcessContract } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@sbx/core';
import type { AioApi } from './aio-api.js';
import { AioBashLauncher } from './aio-bash-processes.js';
import { AioSandbox } from './aio-sandbox.js';
import { startStandin, type StandinFixture } from './aio-standin.fixture.js';

// The process contract over HTTP against the stand-in server in this process: plain commands on
// the shell session, streamed ones and background processes on the async bash API. The same suite
// runs against the stand-in image in a real container in `aio-sandbox.int.test.ts`.
/** A sandbox on a stand-in of its own; `connect` opens a second client of the same container. */
async function standinSandbox() {
  const standin = await startStandin();
  const sandbox = new AioSandbox('aio-process', { baseUrl: standin.url, homeDir: standin.home });
  const workdir = `${standin.home}/work`;
  await sandbox.executeCommand(`mkdir -p ${workdir}`);
  return {
    sandbox,
    workdir,
    cleanup: async () => {
      await sandbox.close();
      await standin.close();
    },
    connect: async () =>
      new AioSandbox('aio-process', { baseUrl: standin.url, homeDir: standin.home }),
  };
}

describeProcessContract('AioSandbox (stand-in server in process)', standinSandbox, {
  secondClient: (sut) => (sut as Awaited<ReturnType<typeof standinSandbox>>).connect(),
});

describe('AioSandbox background processes against the image faults', () => {
  let standin: StandinFixture;
  let sandbox: AioSandbox;
  beforeEach(async () => {
    standin = await startStandin();
    sandbox = new AioSandbox('aio-faults', { baseUrl: standin.url, homeDir: standin.home });
  });
  afterEach(async () => {
    await sandbox.close();
    await standin.close();
  });

  it('a process whose bash session the image dropped ends as lost, with a log line', async () => {
    const handle = await sandbox.processes.start('echo up; sleep 60');
    const [session] = standin.openBashSessionIds();
    expect(session).toBeDefined();
    // What the image does past its bash-session cap: the session (and its command) is gone.
    await fetch(`${standin.url}/v1/bash/sessions/${session}/close`, { method: 'POST' });
    expect(await handle.wait()).toMatchObject({ exitCode: null, signal: 'lost' });
  });

  it('a background session is closed once its command has ended', async () => {
    const handle = await sandbox.processes.start('echo done');
    await handle.wait();
    expect((await handle.output()).stdout).toBe('done\n');
    expect(standin.openBashSessionIds()).toEqual([]);
  });

  it('close() kills what still runs and closes its session', async () => {
    const handle = await sandbox.processes.start('sleep 60');
    await sandbox.close();
    expect(handle.info().status).toBe('exited');
    expect(standin.openBashSessionIds()).toEqual([]);
  });

  it('refuses SIGHUP (the image sends SIGTERM, SIGKILL and SIGINT only) and bytes that are not UTF-8', async () => {
    const handle = await sandbox.processes.start('cat');
    await expect(handle.kill('SIGHUP')).rejects.toMatchObject({
      code: 'CAPABILITY_NOT_SUPPORTED',
    });
    expect(handle.info().status).toBe('running');
    await expect(handle.write(new Uint8Array([0xff, 0xfe]))).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(handle.closeStdin()).rejects.toMatchObject({ code: 'CAPABILITY_NOT_SUPPORTED' });
    await handle.kill('SIGKILL');
    await handle.wait();
  });

  it('gives the image its limit as a backstop (a second later); a process without one gets none', async () => {
    await sandbox.exec('echo x', { onStdout: () => {}, timeoutMs: 2_500 });
    const handle = await sandbox.processes.start('true');
    await handle.wait();
    const starts = standin.requests
      .filter((r) => r.path === '/v1/bash/exec')
      .map((r) => r.body as { async_mode?: boolean; hard_timeout?: number });
    expect(starts.map((b) => b.hard_timeout)).toEqual([4, undefined]);
  });

  it('names a background session sbxp-<hex>, the process id another client reaches it by', async () => {
    const handle = await sandbox.processes.start('sleep 60');
    expect(handle.id).toMatch(/^sbxp-[0-9a-f]{16}$/);
    expect(standin.openBashSessionIds()).toEqual([handle.id]);
    await handle.kill('SIGKILL');
    await handle.wait();
  });

  it('another client attaches only sbx background sessions, and never sends a malformed id', async () => {
    const peer = new AioSandbox('aio-faults', { baseUrl: standin.url, homeDir: standin.home });
    try {
      // A streamed exec runs on the async bash API too, in a session the image names: not ours.
      const streamed = sandbox.exec('sleep 2', { onStdout: () => {} });
      const before = standin.requests.length;
      for (const id of [
        'sbxp-',
        'sbxp-XYZ',
        `sbxp-${'0'.repeat(17)}`,
        '../x',
        'p1',
        'SBXP-0123456789abcdef',
      ]) {
        expect(await peer.processes.get(id)).toBeUndefined();
      }
      expect(standin.requests.length).toBe(before);
      expect(await peer.processes.list()).toEqual([]);
      await streamed;
    } finally {
      await peer.close();
    }
  });

  it('a session a crashed client left behind, its command ended, is not attached', async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${standin.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const id = 'sbxp-0123456789abcdef';
    await post('/v1/bash/sessions/create', { session_id: id });
    await post('/v1/bash/exec', { session_id: id, command: 'true', async_mode: true });
    // Until the image reports the end (a long-poll returns at once for an ended command).
    await post('/v1/bash/output', { session_id: id, offset: 0, wait: true, wait_timeout: 10 });
    const peer = new AioSandbox('aio-faults', { baseUrl: standin.url, homeDir: standin.home });
    try {
      expect(await peer.processes.get(id)).toBeUndefined();
      expect(await peer.processes.list()).toEqual([]);
    } finally {
      await peer.close();
    }
  });

  it('list() probes only the sbx sessions with a command running', async () => {
    await fetch(`${standin.url}/v1/bash/sessions/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: 'sbxp-00000000000000aa' }),
    });
    const peer = new AioSandbox('aio-faults', { baseUrl: standin.url, homeDir: standin.home });
    try {
      const before = standin.requests.length;
      expect(await peer.processes.list()).toEqual([]);
      expect(standin.requests.slice(before).map((r) => r.path)).toEqual(['/v1/bash/sessions']);
    } finally {
      await peer.close();
    }
  });

  it('an ended background process is not attached', async () => {
    const handle = await sandbox.processes.start('echo done; sleep 0.2; echo later >&2; sleep 60');
    const peer = new AioSandbox('aio-faults', { baseUrl: standin.url, homeDir: standin.home });
    try {
      await handle.kill('SIGKILL');
      await handle.wait();
      expect(await peer.processes.get(handle.id)).toBeUndefined();
    } finally {
      await peer.close();
    }
  });
});

describe('AioBashLauncher.discover', () => {
  it('looks at no more than 64 running sbx sessions, however many the image lists', async () => {
    const sessions = Array.from({ length: 500 }, (_, i) => ({
      sessionId: `sbxp-${i.toString(16).padStart(16, '0')}`,
      currentCommand: 'sleep 1',
    }));
    const launcher = new AioBashLauncher({
      api: { bash: { sessions: async () => sessions } } as unknown as AioApi,
      logger: silentLogger,
      sandboxId: 'aio-discover',
      execDir: async (cwd) => cwd,
      closed: () => false,
      pause: async () => {},
      attachable: true,
    });
    const ids = await launcher.discover();
    expect(ids).toHaveLength(64);
    expect(ids[0]).toBe('sbxp-0000000000000000');
  });
});
