import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseSandboxConfig } from '@sbx/core';
import { describeLifecycleContract, requireService } from '@sbx/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { AioSandboxProvider } from './aio-sandbox-provider.js';
import {
  AIO_STANDIN_IMAGE,
  dockerFor,
  imagesPresent,
  removeByPrefix,
  runPrefix,
} from './docker-test-support.js';
import { RecordingLogger } from './testing/provider-harness.js';

// Pause and resume against the real engine (tools/services/start-docker.sh, the stand-in image of
// tools/images/build-images.sh): `docker pause` freezes the container with its processes, and the
// container's own state is what another instance reads.
const dockerHost = await requireService('docker');
const docker = dockerHost ? dockerFor(dockerHost) : undefined;
const ready = docker ? await imagesPresent(docker, [AIO_STANDIN_IMAGE]) : false;
const prefixes: string[] = [];
const dirs: string[] = [];

async function makeProvider(prefix = runPrefix('pause'), baseDir?: string, background = true) {
  if (!prefixes.includes(prefix)) prefixes.push(prefix);
  const dir = baseDir ?? (await mkdtemp(path.join(tmpdir(), 'sbx-aio-pause-')));
  if (!dirs.includes(dir)) dirs.push(dir);
  const config = parseSandboxConfig(
    {
      use: '@sbx/aio',
      image: AIO_STANDIN_IMAGE,
      container_prefix: prefix,
      port: 20000 + Math.floor(Math.random() * 20000),
      base_dir: dir,
      ownership: { type: 'memory' },
      aio: { network: 'host', ready_timeout_seconds: 30, stop_grace_seconds: 2 },
    },
    { env: {} },
  );
  const provider = new AioSandboxProvider({ config, logger: new RecordingLogger(), background });
  await provider.ready();
  return { provider, prefix, baseDir: dir };
}

async function stateOf(name: string): Promise<{ Paused?: boolean; Running?: boolean }> {
  return (await docker!.getContainer(name).inspect()).State;
}

afterAll(async () => {
  if (docker) for (const p of prefixes) await removeByPrefix(docker, p);
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

if (ready) {
  describeLifecycleContract('AioSandboxProvider (real Docker, stand-in image)', async () => {
    const { provider } = await makeProvider();
    return { provider };
  });
}

describe.skipIf(!ready)('AIO pause on real Docker', () => {
  it('pause freezes the container with its processes; resume continues them', async () => {
    const { provider, prefix } = await makeProvider();
    try {
      const id = await provider.acquire({ userId: 'u1', threadId: 'freeze' });
      const box = provider.get(id)!;
      // A process started before the pause, counting into a file.
      await box.processes!.start(
        'i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.2; done',
      );
      const count = async () =>
        Number(
          (await provider.get(id)!.exec('cat /tmp/count 2>/dev/null || echo 0')).stdout.trim(),
        );
      await expect.poll(count, { timeout: 20_000 }).toBeGreaterThan(0);
      await provider.pause(id);
      expect(await stateOf(`${prefix}-${id}`)).toMatchObject({ Paused: true, Running: true });
      expect(provider.get(id)).toBeUndefined();
      await provider.resume(id);
      expect((await stateOf(`${prefix}-${id}`)).Paused).toBe(false);
      const first = await count();
      // The counter kept its state and keeps counting: the process survived the pause.
      expect(first).toBeGreaterThan(0);
      await expect.poll(count, { timeout: 20_000 }).toBeGreaterThan(first);
    } finally {
      await provider.shutdown();
    }
  });

  it('the engine is the record: another instance finds the container paused, and its acquire resumes it', async () => {
    const a = await makeProvider();
    const id = await a.provider.acquire({ userId: 'u1', threadId: 'handover' });
    await a.provider.get(id)!.writeFile('/mnt/user-data/workspace/h.txt', 'from a\n');
    await a.provider.pause(id);
    // `sbx ls` on the pausing instance says paused.
    expect((await a.provider.listSandboxes()).find((s) => s.id === id)?.state).toBe('paused');
    // The instance goes away without stopping anything (a rolling restart).
    await a.provider.reset();
    expect((await stateOf(`${a.prefix}-${id}`)).Paused).toBe(true);
    const b = await makeProvider(a.prefix, a.baseDir);
    try {
      const listed = (await b.provider.listSandboxes()).find((s) => s.id === id);
      expect(listed?.state).toMatch(/^paused/);
      expect(await b.provider.acquire({ userId: 'u1', threadId: 'handover' })).toBe(id);
      expect((await stateOf(`${a.prefix}-${id}`)).Paused).toBe(false);
      expect(await b.provider.get(id)!.readFile('/mnt/user-data/workspace/h.txt')).toBe('from a\n');
    } finally {
      await b.provider.shutdown();
    }
  });

  it('without a reconciliation pass to adopt it, the acquire discovers the paused container and resumes it', async () => {
    const a = await makeProvider();
    const id = await a.provider.acquire({ userId: 'u1', threadId: 'discover' });
    await a.provider.get(id)!.writeFile('/mnt/user-data/workspace/d.txt', 'found\n');
    await a.provider.pause(id);
    await a.provider.reset();
    // No background work: the thread's acquire is the first to look (discovery, not adoption).
    const b = await makeProvider(a.prefix, a.baseDir, false);
    try {
      expect(await b.provider.acquire({ userId: 'u1', threadId: 'discover' })).toBe(id);
      expect((await stateOf(`${a.prefix}-${id}`)).Paused).toBe(false);
      expect(await b.provider.get(id)!.readFile('/mnt/user-data/workspace/d.txt')).toBe('found\n');
    } finally {
      await b.provider.shutdown();
    }
  });

  it('pausing twice and resuming twice are both fine (the engine answers "already" / "not paused")', async () => {
    const { provider, prefix } = await makeProvider();
    try {
      const id = await provider.acquire({ userId: 'u1', threadId: 'twice' });
      await provider.pause(id);
      await provider.backend.pause!({ sandboxId: id, sandboxUrl: '', createdAt: 0 });
      expect((await stateOf(`${prefix}-${id}`)).Paused).toBe(true);
      await provider.resume(id);
      await provider.resume(id);
      expect((await stateOf(`${prefix}-${id}`)).Paused).toBe(false);
    } finally {
      await provider.shutdown();
    }
  });

  it('a paused sandbox is still stopped by shutdown (the engine stops a paused container)', async () => {
    const { provider, prefix } = await makeProvider();
    const id = await provider.acquire({ userId: 'u1', threadId: 'stop-paused' });
    await provider.pause(id);
    await provider.shutdown();
    const deadline = Date.now() + 15_000;
    let left = 1;
    while (Date.now() < deadline) {
      const all = await docker!.listContainers({ all: true, filters: { name: [`${prefix}-`] } });
      left = all.length;
      if (left === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(left).toBe(0);
  });
});
