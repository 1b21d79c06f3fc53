import { randomBytes } from 'node:crypto';
import { isSbxError } from '@sbx/core';
import { requireService } from '@sbx/core/testing';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { AioSandbox } from './aio-sandbox.js';
import {
  AIO_STANDIN_IMAGE,
  BUSYBOX_IMAGE,
  asClient,
  dockerFor,
  imagesPresent,
  removeByPrefix,
  runPrefix,
} from './docker-test-support.js';
import { LocalContainerBackend } from './local-container-backend.js';
import type { LocalContainerBackendOptions } from './local-container-backend.js';

// LocalContainerBackend against the real engine (tools/services/start-docker.sh): host-network
// containers of the local stand-in image, reached on 127.0.0.1 only.
const dockerHost = await requireService('docker');
const docker = dockerHost ? dockerFor(dockerHost) : undefined;
const ready = docker ? await imagesPresent(docker, [AIO_STANDIN_IMAGE, BUSYBOX_IMAGE]) : false;
const prefix = runPrefix('backend');
const id = () => randomBytes(6).toString('hex');

function makeBackend(extra: Partial<LocalContainerBackendOptions> = {}): LocalContainerBackend {
  return new LocalContainerBackend({
    docker: asClient(docker!),
    image: AIO_STANDIN_IMAGE,
    containerPrefix: prefix,
    network: 'host',
    basePort: 20000 + Math.floor(Math.random() * 20000),
    ...extra,
  });
}

describe.skipIf(!ready)('LocalContainerBackend (real Docker)', () => {
  const d = docker!;

  afterAll(async () => {
    await removeByPrefix(d, prefix);
  });

  it('§9.3.49 create → ready → exec → stop', async () => {
    const backend = makeBackend();
    const sandboxId = id();
    const info = await backend.create({ sandboxId });
    expect(info.containerName).toBe(`${prefix}-${sandboxId}`);
    expect(info.sandboxUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const inspected = await d.getContainer(info.containerName!).inspect();
    expect(inspected.Config.Labels).toMatchObject({
      'sbx.managed': 'true',
      'sbx.sandbox-id': sandboxId,
      'sbx.port': new URL(info.sandboxUrl).port,
      'sbx.skills-root': '/mnt/skills',
    });
    expect(inspected.HostConfig.AutoRemove).toBe(true);
    // The hardened default profile and the default limits, as the engine applied them.
    expect(inspected.HostConfig.SecurityOpt).toEqual(['no-new-privileges:true']);
    expect(inspected.HostConfig.CapDrop).toEqual(['ALL']);
    expect(inspected.HostConfig).toMatchObject({
      Memory: 4096 * 1024 * 1024,
      NanoCpus: 2e9,
      PidsLimit: 1024,
    });
    const sandbox = new AioSandbox(sandboxId, { baseUrl: info.sandboxUrl });
    expect(await sandbox.executeCommand('echo from-container; id -u')).toBe('from-container\n0\n');
    await sandbox.close();
    expect(await backend.checkHealth(info)).toBe('alive');
    await backend.destroy(info);
    expect(await backend.checkHealth(info)).toBe('dead');
    await backend.destroy(info); // already gone: fine
  });

  it('bind-mounts a read-only host directory', async () => {
    const backend = makeBackend({
      mounts: [{ hostPath: '/tmp', containerPath: '/mnt/host-tmp', readOnly: true }],
    });
    const info = await backend.create({ sandboxId: id() });
    const sandbox = new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl });
    try {
      const out = await sandbox.executeCommand('touch /mnt/host-tmp/x 2>/dev/null || echo refused');
      expect(out).toBe('refused\n');
    } finally {
      await sandbox.close();
      await backend.destroy(info);
    }
  });

  it('§4.8 §9.3.42 discovers a running sandbox by name and lists it by label', async () => {
    const backend = makeBackend();
    const info = await backend.create({ sandboxId: id() });
    try {
      const other = makeBackend(); // a second gateway: same prefix, no in-process state
      const found = await other.discover(info.sandboxId);
      expect(found).toMatchObject({
        sandboxId: info.sandboxId,
        sandboxUrl: info.sandboxUrl,
        containerName: info.containerName,
        managed: true,
      });
      expect(found!.createdAt).toBeGreaterThan(0);
      const listed = await other.listRunning();
      expect(listed.map((i) => i.sandboxId)).toContain(info.sandboxId);
      expect(await other.discover(id())).toBeNull();
    } finally {
      await backend.destroy(info);
    }
  });

  it('§4.3 adopts the existing container when the name is taken', async () => {
    const backend = makeBackend();
    const sandboxId = id();
    const first = await backend.create({ sandboxId });
    try {
      const again = await makeBackend().create({ sandboxId });
      expect(again.containerId).toBe(first.containerId);
      expect(again.sandboxUrl).toBe(first.sandboxUrl);
    } finally {
      await backend.destroy(first);
    }
  });

  it('§9.3.44 §9.3.49 lists an unlabelled container of the prefix (reference-made) with an empty URL, and never another prefix', async () => {
    const refName = `${prefix}-ref${id()}`;
    const foreign = `x${prefix}-other`;
    for (const name of [refName, foreign]) {
      const c = await d.createContainer({
        name,
        Image: BUSYBOX_IMAGE,
        Cmd: ['sleep', '300'],
        HostConfig: { AutoRemove: true, NetworkMode: 'host' },
      });
      await c.start();
    }
    try {
      const listed = await makeBackend().listRunning();
      const ref = listed.find((i) => i.containerName === refName);
      expect(ref).toMatchObject({ sandboxUrl: '', managed: false });
      expect(ref!.createdAt).toBeGreaterThan(0);
      expect(listed.some((i) => i.containerName === foreign)).toBe(false);
    } finally {
      for (const name of [refName, foreign]) await d.getContainer(name).remove({ force: true });
    }
  });

  it('§4.7 health: killed or removed is dead; an unreachable engine is unknown', async () => {
    const backend = makeBackend();
    const info = await backend.create({ sandboxId: id() });
    expect(await backend.checkHealth(info)).toBe('alive');
    await d.getContainer(info.containerId!).kill();
    expect(await backend.checkHealth(info)).toBe('dead');
    await d
      .getContainer(info.containerId!)
      .remove({ force: true })
      .catch((err: { statusCode?: number }) => {
        if (err.statusCode !== 404 && err.statusCode !== 409) throw err;
      });
    expect(await backend.checkHealth(info)).toBe('dead');
    const nowhere = new LocalContainerBackend({
      docker: asClient(new Docker({ socketPath: `/tmp/sbx-no-such-engine-${id()}.sock` })),
      containerPrefix: prefix,
      network: 'host',
    });
    expect(await nowhere.checkHealth(info)).toBe('unknown');
    expect(await nowhere.discover(info.sandboxId)).toBeNull();
    expect(await nowhere.listRunning()).toEqual([]);
  });

  it('§9.3.41 a stop that outlasts its bound propagates; the container is still running', async () => {
    const name = `${prefix}-stubborn${id()}`;
    const c = await d.createContainer({
      name,
      Image: BUSYBOX_IMAGE,
      Cmd: ['sh', '-c', 'trap "" TERM; while true; do sleep 1; done'],
      HostConfig: { AutoRemove: true, NetworkMode: 'host' },
    });
    await c.start();
    const backend = makeBackend({ stopTimeoutMs: 1000, stopGraceSeconds: 10 });
    const info = {
      sandboxId: name.slice(prefix.length + 1),
      sandboxUrl: '',
      containerName: name,
      createdAt: 0,
    };
    try {
      let caught: unknown;
      try {
        await backend.destroy(info);
      } catch (err) {
        caught = err;
      }
      expect(isSbxError(caught) && caught.message).toContain(
        `Timed out stopping container ${name}`,
      );
      expect((await c.inspect()).State.Running).toBe(true);
    } finally {
      await c.remove({ force: true });
    }
  });

  it('leaves no container of this run behind (label query)', async () => {
    const left = await d.listContainers({
      all: true,
      filters: { label: ['sbx.managed=true'], name: [`${prefix}-`] },
    });
    expect(left).toEqual([]);
  });
});
