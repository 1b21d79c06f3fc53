import { randomBytes } from 'node:crypto';
import { isSbxError } from '@sbx/core';
import { describeProcessContract, describeSandboxContract } from '@sbx/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { AioSandbox } from './aio-sandbox.js';
import { BASH_EXEC_UNSUPPORTED_MESSAGE } from './bash-exec-unsupported.js';
import { removeByPrefix, runPrefix, standinBackend, standinDocker } from './docker-test-support.js';

// AioSandbox against a real container of the stand-in image (host networking, 127.0.0.1), created
// by LocalContainerBackend: the whole core contract, including /mnt/user-data downloads.
const { docker, ready } = await standinDocker();
const prefix = runPrefix('sandbox');

function backendWith(environment: Record<string, string> = {}, apiKey?: string) {
  return standinBackend(docker!, prefix, { environment, ...(apiKey ? { apiKey } : {}) });
}

/** A sandbox in a container of its own, with a fresh work directory (`tag` names the container). */
async function containerSandbox(tag: string) {
  const backend = backendWith();
  const info = await backend.create({ sandboxId: `${tag}${randomBytes(4).toString('hex')}` });
  const sandbox = new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl });
  const workdir = `/mnt/user-data/workspace/${randomBytes(4).toString('hex')}`;
  await sandbox.executeCommand(`mkdir -p ${workdir}`);
  return {
    sandbox,
    workdir,
    cleanup: async () => {
      await sandbox.close();
      await backend.destroy(info);
    },
    /** A second client of the same container, as another gateway instance would open. */
    connect: async () => new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl }),
  };
}

if (ready) {
  describeSandboxContract('AioSandbox (stand-in container)', () => containerSandbox('c'));
  describeProcessContract('AioSandbox (stand-in container)', () => containerSandbox('p'), {
    secondClient: (sut) => (sut as Awaited<ReturnType<typeof containerSandbox>>).connect(),
  });
}

describe.skipIf(!ready)('AioSandbox in a container', () => {
  afterAll(async () => {
    await removeByPrefix(docker!, prefix);
  });

  it('reads home_dir and keeps shell state in the container session', async () => {
    const backend = backendWith();
    const info = await backend.create({ sandboxId: `h${randomBytes(4).toString('hex')}` });
    const sandbox = new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl });
    try {
      expect(await sandbox.getHomeDir()).toBe('/root');
      await sandbox.executeCommand('cd /mnt && export IN_CONTAINER=1');
      expect(await sandbox.executeCommand('echo "$(pwd):$IN_CONTAINER"')).toBe('/mnt:1\n');
      expect(await sandbox.executeCommand('echo "[$S]"', { env: { S: 'x' } })).toBe('[x]\n');
      expect(await sandbox.executeCommand('echo "[$S]"')).toBe('[]\n');
    } finally {
      await sandbox.close();
      await backend.destroy(info);
    }
  });

  it('§9.1.8 an image without /v1/bash (SBX_AIO_STANDIN_NO_BASH_API=1) gets the upgrade message', async () => {
    const backend = backendWith({ SBX_AIO_STANDIN_NO_BASH_API: '1' });
    const info = await backend.create({ sandboxId: `o${randomBytes(4).toString('hex')}` });
    const sandbox = new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl });
    try {
      expect(await sandbox.executeCommand('echo x', { env: { A: '1' } })).toBe(
        BASH_EXEC_UNSUPPORTED_MESSAGE,
      );
      expect(await sandbox.executeCommand('echo plain')).toBe('plain\n');
    } finally {
      await sandbox.close();
      await backend.destroy(info);
    }
  });

  it('recovers from ErrorObservation (SBX_AIO_STANDIN_ERROR_OBSERVATION) in the container', async () => {
    const backend = backendWith({ SBX_AIO_STANDIN_ERROR_OBSERVATION: 'CORRUPT-NOW' });
    const info = await backend.create({ sandboxId: `e${randomBytes(4).toString('hex')}` });
    const sandbox = new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl });
    try {
      await sandbox.executeCommand('echo CORRUPT-NOW');
      expect(await sandbox.executeCommand('echo healed')).toBe('healed\n');
      await sandbox.executeCommandInScope('echo CORRUPT-NOW', { scopeId: 'sub' });
      expect(await sandbox.executeCommandInScope('echo scoped', { scopeId: 'sub' })).toBe(
        'scoped\n',
      );
    } finally {
      await sandbox.close();
      await backend.destroy(info);
    }
  });

  it('SANDBOX_API_KEY in the container: readiness and every call need the key', async () => {
    const backend = backendWith({ SANDBOX_API_KEY: 'k-container' }, 'k-container');
    const info = await backend.create({ sandboxId: `k${randomBytes(4).toString('hex')}` });
    const keyed = new AioSandbox(info.sandboxId, {
      baseUrl: info.sandboxUrl,
      apiKey: 'k-container',
    });
    const keyless = new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl });
    try {
      expect(await keyed.executeCommand('echo in')).toBe('in\n');
      await expect(keyless.executeCommand('echo in')).rejects.toThrow(/401/);
    } finally {
      await keyed.close();
      await keyless.close();
      await backend.destroy(info);
    }
  });

  it('a command cut short by docker stop is a typed error, not an ordinary result', async () => {
    const backend = backendWith();
    const info = await backend.create({ sandboxId: `d${randomBytes(4).toString('hex')}` });
    const sandbox = new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl });
    try {
      await sandbox.executeCommand('true');
      const running = sandbox.executeCommand('echo started; sleep 30').then(
        (text) => ({ text }),
        (error: unknown) => ({ error }),
      );
      // Give the command time to start (it prints first), then stop the container under it.
      await sandbox.executeCommandInScope('sleep 0.3', { scopeId: 'wait' });
      await backend.destroy(info);
      const outcome = await running;
      expect(outcome).toHaveProperty('error');
      expect(isSbxError((outcome as { error: unknown }).error)).toBe(true);
    } finally {
      await sandbox.close();
    }
  });

  it('a pipeline inside $(…) keeps the rest of the command', async () => {
    const backend = backendWith();
    const info = await backend.create({ sandboxId: `p${randomBytes(4).toString('hex')}` });
    const sandbox = new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl });
    try {
      expect(await sandbox.executeCommand('echo "$(echo a | tr a b) after"; echo last')).toBe(
        'b after\nlast\n',
      );
    } finally {
      await sandbox.close();
      await backend.destroy(info);
    }
  });

  it('leaves no container of this run behind', async () => {
    const left = await docker!.listContainers({
      all: true,
      filters: { label: ['sbx.managed=true'], name: [`${prefix}-`] },
    });
    expect(left.filter((c) => c.State === 'running')).toEqual([]);
  });
});
