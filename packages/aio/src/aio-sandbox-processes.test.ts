import { describeProcessContract } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AioSandbox } from './aio-sandbox.js';
import { startStandin, type StandinFixture } from './aio-standin.fixture.js';

// The process contract over HTTP against the stand-in server in this process: plain commands on
// the shell session, streamed ones and background processes on the async bash API. The same suite
// runs against the stand-in image in a real container in `aio-sandbox.int.test.ts`.
describeProcessContract('AioSandbox (stand-in server in process)', async () => {
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
  };
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
});
