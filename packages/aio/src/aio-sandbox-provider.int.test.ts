import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getSandboxLeaseManager, parseSandboxConfig } from '@sbx/core';
import { describeProviderContract, requireService } from '@sbx/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import type { AioSandbox } from './aio-sandbox.js';
import { AioSandboxProvider } from './aio-sandbox-provider.js';
import {
  AIO_STANDIN_IMAGE,
  dockerFor,
  imagesPresent,
  removeByPrefix,
  runPrefix,
} from './docker-test-support.js';
import { LocalContainerBackend } from './local-container-backend.js';
import { RecordingLogger } from './testing/provider-harness.js';

// The provider over the real engine (tools/services/start-docker.sh): it builds its own
// LocalContainerBackend from the configuration, host-network containers of the stand-in image.
const dockerHost = await requireService('docker');
const docker = dockerHost ? dockerFor(dockerHost) : undefined;
const ready = docker ? await imagesPresent(docker, [AIO_STANDIN_IMAGE]) : false;
const prefixes: string[] = [];
const dirs: string[] = [];

async function makeProvider(extra: Record<string, unknown> = {}) {
  const prefix = runPrefix('prov');
  prefixes.push(prefix);
  const baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-aio-prov-'));
  dirs.push(baseDir);
  const config = parseSandboxConfig(
    {
      use: '@sbx/aio',
      image: AIO_STANDIN_IMAGE,
      container_prefix: prefix,
      port: 20000 + Math.floor(Math.random() * 20000),
      base_dir: baseDir,
      ownership: { type: 'memory' },
      aio: { network: 'host', ready_timeout_seconds: 30, stop_grace_seconds: 2 },
      spec: { images: [AIO_STANDIN_IMAGE], max_memory_mb: 2048 },
      ...extra,
    },
    { env: {} },
  );
  const logger = new RecordingLogger();
  const provider = new AioSandboxProvider({ config, logger });
  await provider.ready();
  return { provider, prefix, baseDir, logger };
}

/**
 * Containers of `prefix` still present. A stopped container of ours is auto-removed by the engine
 * a moment after its stop returned, so this waits (bounded) for the removals to land.
 */
async function containersLeft(prefix: string): Promise<string[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const all = await docker!.listContainers({ all: true, filters: { name: [`${prefix}-`] } });
    const names = all.flatMap((c) => c.Names ?? []).filter((n) => n.startsWith(`/${prefix}-`));
    if (names.length === 0 || Date.now() > deadline) return names;
    await new Promise((r) => setTimeout(r, 100));
  }
}

afterAll(async () => {
  if (docker) for (const p of prefixes) await removeByPrefix(docker, p);
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

if (ready) {
  describeProviderContract(
    'AioSandboxProvider (real Docker, stand-in image)',
    async () => {
      const { provider } = await makeProvider();
      return { provider };
    },
    { specImage: AIO_STANDIN_IMAGE },
  );
}

describe.skipIf(!ready)('AioSandboxProvider on real Docker', () => {
  it('uses real containers: thread data is bind-mounted, the backend is detected', async () => {
    const { provider, prefix, baseDir } = await makeProvider();
    try {
      expect(provider.backend).toBeInstanceOf(LocalContainerBackend);
      expect(provider.usesThreadDataMounts).toBe(true);
      const id = await provider.acquire({ userId: 'u1', threadId: 'docker-t' });
      await provider.get(id)!.writeFile('/mnt/user-data/outputs/report.txt', 'hello\n');
      const { readFile } = await import('node:fs/promises');
      expect(
        await readFile(
          path.join(baseDir, 'users/u1/threads/docker-t/user-data/outputs/report.txt'),
          'utf8',
        ),
      ).toBe('hello\n');
      const inspected = await docker!.getContainer(`${prefix}-${id}`).inspect();
      expect(inspected.Config.Labels['sbx.managed']).toBe('true');
    } finally {
      await provider.shutdown();
    }
  });

  it('a per-acquire spec: image, resources and labels reach the container; bounds are enforced', async () => {
    const { provider, prefix } = await makeProvider();
    try {
      const base = await provider.acquire({ userId: 'u1', threadId: 'spec-t' });
      const spec = {
        image: AIO_STANDIN_IMAGE,
        resources: { memoryMb: 256, cpus: 0.5, pids: 200 },
        labels: { 'sbx.dev/tenant': 'acme', 'cost-centre': 'r-and-d' },
      };
      const id = await provider.acquire({ userId: 'u1', threadId: 'spec-t', spec });
      expect(id).not.toBe(base);
      expect(await provider.acquire({ userId: 'u1', threadId: 'spec-t', spec })).toBe(id);
      const inspected = await docker!.getContainer(`${prefix}-${id}`).inspect();
      expect(inspected.Config.Image).toBe(AIO_STANDIN_IMAGE);
      expect(inspected.Config.Labels).toMatchObject({
        'sbx.dev/tenant': 'acme',
        'cost-centre': 'r-and-d',
        'sbx.sandbox-id': id,
      });
      expect(inspected.HostConfig).toMatchObject({
        Memory: 256 * 1024 * 1024,
        NanoCpus: 5e8,
        PidsLimit: 200,
      });
      const over = provider.acquire({
        userId: 'u1',
        threadId: 'spec-t',
        spec: { resources: { memoryMb: 4096 } },
      });
      await expect(over).rejects.toMatchObject({ code: 'SANDBOX_SPEC' });
      const elsewhere = provider.acquire({
        userId: 'u1',
        threadId: 'spec-t',
        spec: { image: 'registry.example/other:1' },
      });
      await expect(elsewhere).rejects.toThrow(/not in sandbox.spec.images/);
    } finally {
      await provider.shutdown();
    }
  });

  it('sandbox.aio.api_key: the container enforces it, the provider sends it on every call', async () => {
    const { provider, prefix, logger } = await makeProvider({
      aio: {
        network: 'host',
        ready_timeout_seconds: 30,
        stop_grace_seconds: 2,
        api_key: 'k-provider-secret',
      },
    });
    try {
      const id = await provider.acquire({ userId: 'u1', threadId: 'keyed' });
      expect(await provider.get(id)!.executeCommand('echo keyed')).toBe('keyed\n');
      const inspected = await docker!.getContainer(`${prefix}-${id}`).inspect();
      expect(inspected.Config.Env).toContain('SANDBOX_API_KEY=k-provider-secret');
      const url = `http://127.0.0.1:${Object.values(inspected.Config.Env ?? [])
        .find((e) => e.startsWith('SBX_AIO_PORT='))
        ?.slice('SBX_AIO_PORT='.length)}`;
      expect((await fetch(`${url}/v1/sandbox`)).status).toBe(401);
      // Never logged (the container spec log redacts environment values).
      expect(JSON.stringify(logger)).not.toContain('k-provider-secret');
    } finally {
      await provider.shutdown();
    }
  });

  it('the lease manager releases each holder’s command scope on the real client; the last holder parks', async () => {
    const { provider } = await makeProvider();
    try {
      const manager = getSandboxLeaseManager(provider);
      const id = await manager.acquire('lead', { userId: 'u1', threadId: 'scopes' });
      expect(await manager.acquire('subagent', { userId: 'u1', threadId: 'scopes' })).toBe(id);
      const sandbox = provider.get(id) as AioSandbox;
      await sandbox.executeCommandInScope('export SCOPE_VAR=sub', { scopeId: 'subagent' });
      expect(
        await sandbox.executeCommandInScope('echo "v=$SCOPE_VAR"', { scopeId: 'subagent' }),
      ).toContain('v=sub');
      await sandbox.executeCommandInScope('true', { scopeId: 'lead' });
      expect(sandbox.activeScopeCount).toBe(2);
      await manager.release('subagent');
      expect(sandbox.activeScopeCount).toBe(1);
      expect(provider.stateSnapshot().active).toEqual([id]);
      await manager.release('lead');
      expect(sandbox.activeScopeCount).toBe(0);
      expect(provider.stateSnapshot()).toMatchObject({ active: [], warm: [id] });
    } finally {
      await provider.shutdown();
    }
  });

  it('a second instance in this process adopts what the first left running, and shutdown leaves nothing', async () => {
    const first = await makeProvider();
    const id = await first.provider.acquire({ userId: 'u1', threadId: 'adopt' });
    await first.provider.release(id);
    // Drop the first instance without a shutdown (its memory leases die with it).
    await first.provider.reset();
    const second = new AioSandboxProvider({
      config: parseSandboxConfig(
        {
          use: '@sbx/aio',
          image: AIO_STANDIN_IMAGE,
          container_prefix: first.prefix,
          port: 20000 + Math.floor(Math.random() * 20000),
          base_dir: first.baseDir,
          ownership: { type: 'memory' },
          aio: { network: 'host', stop_grace_seconds: 2 },
        },
        { env: {} },
      ),
      logger: new RecordingLogger(),
    });
    await second.ready(); // the start-up reconciliation adopts it (memory store: no grace)
    expect(second.stateSnapshot().warm).toEqual([id]);
    expect(await second.acquire({ userId: 'u1', threadId: 'adopt' })).toBe(id);
    expect(await second.get(id)!.executeCommand('echo adopted')).toContain('adopted');
    await second.shutdown();
    expect(await containersLeft(first.prefix)).toEqual([]);
  });
});
