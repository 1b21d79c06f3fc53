import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import {
  AbortedError,
  OwnershipBackendError,
  SandboxIdentityCollisionError,
  ProviderClosedError,
  getSandboxLeaseManager,
  loadProviderClass,
  parseSandboxConfig,
} from '@sbx/core';
import {
  MemoryLeaseTable,
  TEARDOWN_JOIN_TIMEOUT_MS,
  deriveSandboxScopeToken,
} from '@sbx/core/provider-kit';
import { settle, track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';
import { AioSandboxProvider, createAioProvider } from './aio-sandbox-provider.js';
import { LocalContainerBackend } from './local-container-backend.js';
import { provisionerExtraMounts } from './provisioner-mounts.js';
import { RemoteSandboxBackend } from './remote-sandbox-backend.js';
import { MemorySandboxBackend } from './testing/memory-sandbox-backend.js';
import type { FakeContainerClient } from './testing/memory-sandbox-backend.js';
import { RecordingLogger } from './testing/provider-harness.js';
import type { Harness } from './testing/provider-harness.js';
import { MemoryOwnershipStore } from '@sbx/core';

const BEING_DESTROYED = 'SANDBOX_BEING_DESTROYED';

const { harness, peerOf } = harnessContext();

async function warmSandbox(h: Harness, thread = 't'): Promise<string> {
  const id = await h.provider.acquire(T(thread));
  await h.provider.release(id);
  return id;
}
const clientOf = (h: Harness, id: string) => h.provider.get(id) as FakeContainerClient;

function configWith(extra: Record<string, unknown> = {}) {
  return parseSandboxConfig(
    { use: '@sbx/aio', base_dir: '/tmp/sbx-aio-unused', ...extra },
    { env: {} },
  );
}

function construct(
  extra: Record<string, unknown>,
  backend = new MemorySandboxBackend(),
  env: Record<string, string> = {},
) {
  return new AioSandboxProvider({
    config: configWith(extra),
    backend,
    ownershipStore: new MemoryOwnershipStore(),
    logger: new RecordingLogger(),
    env,
    background: false,
  });
}

describe('loading and configuration', () => {
  it('`use: "@sbx/aio"` loads the provider class through the core loader', async () => {
    const loaded = await loadProviderClass('@sbx/aio');
    expect(loaded.exportName).toBe('default');
    expect(loaded.target).toBe(AioSandboxProvider);
    const named = await loadProviderClass('@sbx/aio#AioSandboxProvider');
    expect(named.target).toBe(AioSandboxProvider);
    expect(
      createAioProvider({
        config: configWith(),
        backend: new MemorySandboxBackend(),
        ownershipStore: new MemoryOwnershipStore(),
        logger: new RecordingLogger(),
        background: false,
      }),
    ).toBeInstanceOf(AioSandboxProvider);
  });

  it('§9.7.98 thread_data_mounts overrides backend detection in all four combinations', () => {
    const local = new MemorySandboxBackend({ kind: 'local' });
    const remote = new MemorySandboxBackend({ kind: 'remote' });
    expect(construct({}, local).usesThreadDataMounts).toBe(true);
    expect(construct({}, remote).usesThreadDataMounts).toBe(false);
    expect(construct({ thread_data_mounts: false }, local).usesThreadDataMounts).toBe(false);
    expect(construct({ thread_data_mounts: true }, local).usesThreadDataMounts).toBe(true);
    expect(construct({ thread_data_mounts: true }, remote).usesThreadDataMounts).toBe(true);
    expect(construct({ thread_data_mounts: false }, remote).usesThreadDataMounts).toBe(false);
  });

  it('reads the flat sandbox keys and the aio block; defaults where absent', () => {
    const p = construct({
      image: 'sbx-test/aio-standin:1',
      port: 21000,
      container_prefix: 'mine',
      idle_timeout: 0,
      replicas: 5,
      environment: { A: 'b' },
      skills: { container_path: '/opt/skills/' },
      aio: { network: 'host', ready_timeout_seconds: 5, reconcile_max_items: 7 },
    });
    expect(p.settings).toMatchObject({
      image: 'sbx-test/aio-standin:1',
      basePort: 21000,
      containerPrefix: 'mine',
      idleTimeoutSeconds: 0,
      replicas: 5,
      environment: { A: 'b' },
      skillsRoot: '/opt/skills',
      network: 'host',
      readyTimeoutMs: 5000,
      reconcile: { maxItems: 7, maxSeconds: 30, intervalSeconds: 60 },
    });
    const d = construct({});
    expect(d.settings).toMatchObject({
      basePort: 8080,
      containerPrefix: 'sbx-sandbox',
      idleTimeoutSeconds: 600,
      replicas: 3,
      network: 'bridge',
      readyTimeoutMs: 60_000,
    });
  });

  it('rejects bad aio values with the key path, and warns about unknown keys', () => {
    expect(() => construct({ aio: { network: 'overlay', reconcile_max_items: 0 } })).toThrow(
      /sandbox\.aio\.network[\s\S]*sandbox\.aio\.reconcile_max_items/,
    );
    const logger = new RecordingLogger();
    new AioSandboxProvider({
      config: configWith({ aio: { netwrok: 'host' } }),
      backend: new MemorySandboxBackend(),
      ownershipStore: new MemoryOwnershipStore(),
      logger,
      background: false,
    });
    expect(logger.has('warn', 'unknown sandbox.aio fields: netwrok')).toBe(true);
  });

  it('builds a local container backend by default and a provisioner client when provisioner_url is set', () => {
    const local = new AioSandboxProvider({
      config: configWith({ aio: { network: 'host' } }),
      ownershipStore: new MemoryOwnershipStore(),
      logger: new RecordingLogger(),
      background: false,
    });
    expect(local.backend).toBeInstanceOf(LocalContainerBackend);
    const remote = new AioSandboxProvider({
      config: configWith({ provisioner_url: 'http://127.0.0.1:9/' }),
      ownershipStore: new MemoryOwnershipStore(),
      logger: new RecordingLogger(),
      background: false,
    });
    expect(remote.backend).toBeInstanceOf(RemoteSandboxBackend);
    expect(remote.usesThreadDataMounts).toBe(false);
  });

  it('§9.8.136 a Redis stream bridge (section or variable) implies redis ownership with its URL', () => {
    const p = construct({}, new MemorySandboxBackend(), {
      DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://127.0.0.1:6390/2',
    });
    expect(p.ownership).toMatchObject({ type: 'redis', redisUrl: 'redis://127.0.0.1:6390/2' });
    const bridged = new AioSandboxProvider({
      config: configWith(),
      streamBridge: { type: 'redis', redisUrl: 'redis://127.0.0.1:6391/0' },
      backend: new MemorySandboxBackend(),
      ownershipStore: new MemoryOwnershipStore(),
      logger: new RecordingLogger(),
      env: {},
      background: false,
    });
    expect(bridged.ownership).toMatchObject({
      type: 'redis',
      redisUrl: 'redis://127.0.0.1:6391/0',
      source: 'stream-bridge',
    });
    expect(construct({}).ownership.type).toBe('memory');
  });

  it('§9.6.90 the default configuration builds a memory store, which reports it cannot see peers', async () => {
    const logger = new RecordingLogger();
    const p = new AioSandboxProvider({
      config: configWith(),
      backend: new MemorySandboxBackend(),
      logger,
      env: {},
      background: false,
    });
    expect(await p.ownerId()).toMatch(/^.+:[0-9a-f]{32}$/);
    expect(p.ownership.type).toBe('memory');
    expect(logger.has('warn', 'single-instance only')).toBe(true);
    await p.shutdown();
  });

  it('§9.6.91 the lease TTL is interval × multiplier; a multiplier below 2 is refused', () => {
    expect(construct({}).leaseTtlMs).toBe(120_000);
    const p = construct({
      ownership: { type: 'memory', renewal_interval_seconds: 5, ttl_multiplier: 3 },
    });
    expect(p.leaseTtlMs).toBe(15_000);
    expect(() => configWith({ ownership: { type: 'memory', ttl_multiplier: 1 } })).toThrow(
      /ttl_multiplier/,
    );
  });

  it('§9.6.92 owner ids differ per provider instance', async () => {
    const make = () =>
      new AioSandboxProvider({
        config: configWith(),
        backend: new MemorySandboxBackend(),
        logger: new RecordingLogger(),
        env: {},
        background: false,
      });
    const [a, b] = [make(), make()];
    expect(await a.ownerId()).not.toBe(await b.ownerId());
    await Promise.all([a.shutdown(), b.shutdown()]);
  });

  it('§9.6.93 explicit memory ownership beats a Redis variable; no variable means memory', () => {
    const env = { DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL: 'redis://127.0.0.1:6390/0' };
    expect(construct({}, new MemorySandboxBackend(), env).ownership.type).toBe('redis');
    expect(
      construct({ ownership: { type: 'memory' } }, new MemorySandboxBackend(), env).ownership.type,
    ).toBe('memory');
  });

  it('warns when the ownership store cannot see peers (single-instance only)', async () => {
    const h = await harness();
    expect(h.logger.has('warn', 'single-instance only')).toBe(true);
  });
});

describe('identity', () => {
  it('§9.7.120 legacy 8-character ids collide for known pairs; the 16-character ids do not', () => {
    const a = deriveSandboxScopeToken({ userId: 'user-9721', threadId: 'thread-9721' });
    const b = deriveSandboxScopeToken({ userId: 'user-94361', threadId: 'thread-94361' });
    expect(a.slice(0, 8)).toBe(b.slice(0, 8));
    expect(a).not.toBe(b);
    const p = construct({});
    expect(p.sandboxIdFor({ userId: 'user-9721', threadId: 'thread-9721' })).toBe(a);
  });

  it('explicit-policy runs and custom skills roots get distinct identities', () => {
    const p = construct({});
    const base = p.sandboxIdFor(T('t'));
    const policy = p.sandboxIdFor({ ...T('t'), explicitSkillPolicy: true });
    expect(base).toMatch(/^[0-9a-f]{16}$/);
    expect(policy).toMatch(/^s[0-9a-f]{16}$/);
    const custom = construct({ skills: { container_path: '/opt/skills' } });
    expect(custom.sandboxIdFor(T('t'))).not.toBe(base);
  });

  it('a policy run never reuses the shared-mount sandbox of the same thread', async () => {
    const h = await harness();
    const shared = await h.provider.acquire(T('t'));
    const policy = await h.provider.acquire({ ...T('t'), skillPolicy: { allowedSkills: [] } });
    expect(policy).not.toBe(shared);
    const mounts = h.backend.containers.get(policy)!.request!.extraMounts!;
    expect(mounts.find((m) => m.containerPath === '/mnt/skills/public')?.hostPath).toBe(
      path.join(h.baseDir, 'users/u1/threads/t/skills_view/public'),
    );
  });

  it('§9.7.99 an unsafe thread id is rejected before anything is created', async () => {
    const h = await harness();
    await expect(h.provider.acquire(T('../escape'))).rejects.toThrow(/Invalid threadId/);
    expect(h.backend.count('create')).toBe(0);
  });

  it('§9.7.121 forced id collision: tenant B is refused, A’s warm entry untouched (see race row 24)', async () => {
    class Colliding extends AioSandboxProvider {
      override sandboxIdFor() {
        return '0000111122223333';
      }
    }
    const h = await harness({ providerClass: Colliding });
    const id = await warmSandbox(h);
    await expect(h.provider.acquire({ userId: 'u2', threadId: 't' })).rejects.toBeInstanceOf(
      SandboxIdentityCollisionError,
    );
    expect(h.provider.stateSnapshot().warm).toEqual([id]);
    expect(h.backend.count('create')).toBe(1);
    expect(h.backend.count('destroy')).toBe(0);
  });
});

describe('mounts', () => {
  it('§9.7.99/100/102 thread data, ACP workspace (0777, read-only), skills and integrations from the per-user views', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const mounts = h.backend.containers.get(id)!.request!.extraMounts!;
    const thread = path.join(h.baseDir, 'users/u1/threads/t');
    expect(mounts).toEqual([
      {
        hostPath: `${thread}/user-data/workspace`,
        containerPath: '/mnt/user-data/workspace',
        readOnly: false,
      },
      {
        hostPath: `${thread}/user-data/uploads`,
        containerPath: '/mnt/user-data/uploads',
        readOnly: false,
      },
      {
        hostPath: `${thread}/user-data/outputs`,
        containerPath: '/mnt/user-data/outputs',
        readOnly: false,
      },
      { hostPath: `${thread}/acp-workspace`, containerPath: '/mnt/acp-workspace', readOnly: true },
      {
        hostPath: path.join(h.baseDir, 'skills_view/public'),
        containerPath: '/mnt/skills/public',
        readOnly: true,
      },
      {
        hostPath: path.join(h.baseDir, 'users/u1/skills_view/custom'),
        containerPath: '/mnt/skills/custom',
        readOnly: true,
      },
      {
        hostPath: path.join(h.baseDir, 'users/u1/skills_view/legacy'),
        containerPath: '/mnt/skills/legacy',
        readOnly: true,
      },
      {
        hostPath: path.join(h.baseDir, 'users/u1/skills_view/integrations'),
        containerPath: '/mnt/skills/integrations',
        readOnly: true,
      },
    ]);
    expect((await stat(`${thread}/acp-workspace`)).mode & 0o777).toBe(0o777);
    expect((await stat(`${thread}/user-data/uploads`)).isDirectory()).toBe(true);
  });

  it('§9.7.100 a host base dir (Docker-outside-of-Docker) moves the sources, Windows style kept', async () => {
    const h = await harness({ config: { aio: { host_base_dir: 'C:\\deer\\data' } } });
    const id = await h.provider.acquire(T('t'));
    const mounts = h.backend.containers.get(id)!.request!.extraMounts!;
    expect(mounts[0]).toEqual({
      hostPath: 'C:\\deer\\data\\users\\u1\\threads\\t\\user-data\\workspace',
      containerPath: '/mnt/user-data/workspace',
      readOnly: false,
    });
    // The directories themselves are still created locally.
    expect(
      (await stat(path.join(h.baseDir, 'users/u1/threads/t/user-data/workspace'))).isDirectory(),
    ).toBe(true);
  });

  it('§9.7.103 the composition is unique and the provisioner payload carries exactly the allowlisted paths', async () => {
    const h = await harness({ config: { skills: { container_path: '/opt/skills' } } });
    const id = await h.provider.acquire(T('t'));
    const mounts = h.backend.containers.get(id)!.request!.extraMounts!;
    expect(new Set(mounts.map((m) => m.containerPath)).size).toBe(mounts.length);
    const payload = provisionerExtraMounts(mounts, { skillsRoot: '/opt/skills' });
    expect(payload.map((m) => m.container_path)).toEqual([
      '/mnt/acp-workspace',
      '/opt/skills/public',
      '/opt/skills/custom',
      '/opt/skills/legacy',
      '/opt/skills/integrations',
    ]);
  });
});

describe('acquire plumbing', () => {
  it('§9.7.105 create uses the default readiness probe (60 s budget), registers the thread mapping, destroys nothing', async () => {
    const server = http.createServer((req, res) => {
      res.writeHead(req.url === '/v1/sandbox' ? 200 : 404, { 'content-type': 'application/json' });
      res.end('{"success":true,"data":{"home_dir":"/root"}}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const backend = new MemorySandboxBackend();
      const create = backend.create.bind(backend);
      backend.create = async (request) => ({ ...(await create(request)), sandboxUrl: url });
      const h = await harness({ backend, init: { readinessProbe: undefined } });
      expect(h.provider.settings.readyTimeoutMs).toBe(60_000);
      const id = await h.provider.acquire(T('t'));
      expect(h.provider.stateSnapshot().threads).toEqual({ '["u1","t",false]': id });
      expect(backend.count('destroy')).toBe(0);
      expect(h.provider.get(id)).toBeDefined();
    } finally {
      server.close();
    }
  });

  it('§9.7.107 a cancelled waiter leaks no lock and does not block its successor', async () => {
    const h = await harness();
    h.backendGate.pause('create', { times: 1 });
    const first = track(h.provider.acquire(T('t')));
    const create = await h.backendGate.nextCall('create');
    const controller = new AbortController();
    const cancelled = h.provider.acquire({ ...T('t'), signal: controller.signal });
    const successor = track(h.provider.acquire(T('t')));
    controller.abort();
    await expect(cancelled).rejects.toBeInstanceOf(AbortedError);
    await create.release();
    const id = await first.promise;
    expect(await successor.promise).toBe(id);
    expect(h.backend.count('create')).toBe(1);
  });

  it('§9.7.114 a dead cached sandbox: client closed, old container destroyed, new one created and mapped', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const old = clientOf(h, id);
    const oldUrl = old.info.sandboxUrl;
    h.backend.healthOverride.set(id, 'dead');
    h.backendGate.pause('create', { times: 1 });
    const acquire = track(h.provider.acquire(T('t')));
    const create = await h.backendGate.nextCall('create');
    h.backend.healthOverride.delete(id);
    await create.release();
    expect(await acquire.promise).toBe(id);
    expect(old.closed).toBe(true);
    expect(h.backend.count('destroy', id)).toBe(1);
    expect(h.backend.count('create', id)).toBe(2);
    expect(clientOf(h, id).info.sandboxUrl).not.toBe(oldUrl);
  });

  it('§9.7.115 a health check that throws keeps the cached sandbox (unknown is not dead)', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const client = clientOf(h, id);
    h.backend.healthOverride.set(id, new Error('engine unreachable'));
    expect(await h.provider.acquire(T('t'))).toBe(id);
    expect(clientOf(h, id)).toBe(client);
    expect(client.closed).toBe(false);
    expect(h.backend.count('destroy')).toBe(0);
    h.backend.healthOverride.set(id, 'unknown');
    expect(await h.provider.acquire(T('t'))).toBe(id);
  });

  it('§9.7.117 a dead warm entry is destroyed, the pool emptied and a fresh create registered', async () => {
    const h = await harness();
    const id = await warmSandbox(h);
    h.backend.healthOverride.set(id, 'dead');
    h.backendGate.pause('create', { times: 1 });
    const acquire = track(h.provider.acquire(T('t')));
    const create = await h.backendGate.nextCall('create');
    h.backend.healthOverride.delete(id);
    expect(h.provider.stateSnapshot().warm).toEqual([]);
    await create.release();
    expect(await acquire.promise).toBe(id);
    expect(h.backend.count('destroy', id)).toBe(1);
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [id], warm: [] });
  });

  it('an unverifiable discovered container is not adopted: acquire falls through to create', async () => {
    const h = await harness();
    const id = h.provider.sandboxIdFor(T('t'));
    h.backend.startUnready = true;
    h.backend.startExternal(id); // running, but not answering
    h.backend.startUnready = false;
    h.backend.containers.delete(id); // and its name is free again for the create
    expect(await h.provider.acquire(T('t'))).toBe(id);
    expect(h.backend.count('discover', id)).toBe(1);
    expect(h.backend.count('create', id)).toBe(1);
  });

  it('§9.7.122 a readiness timeout stops the container once, under this instance’s del: lease (see race row 19)', async () => {
    const h = await harness();
    h.backend.startUnready = true;
    const id = h.provider.sandboxIdFor(T('t'));
    h.backendGate.pause('destroy', { times: 1 });
    const acquire = track(h.provider.acquire(T('t')));
    const stop = await h.backendGate.nextCall('destroy');
    expect(h.lease(id)).toBe(`del:${h.ownerId}`);
    await stop.release();
    await expect(acquire.promise).rejects.toThrow('failed to become ready');
    expect(h.backend.count('destroy', id)).toBe(1);
  });

  it('§9.7.123 a readiness timeout with every claim refused stops nothing', async () => {
    const h = await harness();
    h.backend.startUnready = true;
    h.faults.fail('claim');
    await expect(h.provider.acquire(T('t'))).rejects.toThrow('failed to become ready');
    expect(h.backend.count('destroy')).toBe(0);
  });

  it('§9.7.119 creating with replicas 2 and two warm entries evicts the oldest, keeps the newer', async () => {
    const h = await harness({ config: { replicas: 2 } });
    const oldest = await warmSandbox(h, 'a');
    await h.clock.advance(1000);
    const newer = await warmSandbox(h, 'b');
    await h.provider.acquire(T('c'));
    expect(h.backend.count('destroy', oldest)).toBe(1);
    expect(h.backend.count('destroy', newer)).toBe(0);
    expect(h.provider.stateSnapshot().warm).toEqual([newer]);
  });

  it('replicas is a soft cap: only warm entries are evicted, creation beyond it goes ahead with a warning', async () => {
    const h = await harness({ config: { replicas: 1 } });
    const a = await h.provider.acquire(T('a'));
    const b = await h.provider.acquire(T('b'));
    expect(h.provider.stateSnapshot().active.toSorted()).toEqual([a, b].sort());
    expect(h.logger.has('warn', 'beyond the soft limit')).toBe(true);
  });

  it('§9.8.132 a reuse whose publish fails raises OwnershipBackendError', async () => {
    const h = await harness();
    await h.provider.acquire(T('t'));
    h.faults.fail('take');
    await expect(h.provider.acquire(T('t'))).rejects.toBeInstanceOf(OwnershipBackendError);
  });

  it('§9.8.131 a created sandbox whose publish fails is destroyed, untracked, its client closed', async () => {
    const h = await harness();
    h.faults.fail('take');
    const id = h.provider.sandboxIdFor(T('t'));
    await expect(h.provider.acquire(T('t'))).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(h.backend.count('destroy', id)).toBe(1);
    expect(h.provider.stateSnapshot().active).toEqual([]);
    expect(h.backend.clients.at(-1)?.closed).toBe(true);
  });

  it('§9.8.140 a second instance’s discover-register takes ownership (threads move between instances)', async () => {
    const a = await harness();
    const b = await peerOf(a);
    const id = await warmSandbox(a);
    await clientOf(a, await a.provider.acquire(T('t'))).writeFile(
      '/mnt/user-data/workspace/x',
      'from A',
    );
    await a.provider.release(id);
    expect(await b.provider.acquire(T('t'))).toBe(id);
    expect(a.lease(id)).toBe(`own:${b.ownerId}`);
    expect(await clientOf(b, id).readFile('/mnt/user-data/workspace/x')).toBe('from A');
    expect(a.backend.count('create')).toBe(1);
  });

  it('§9.8.144 discover-register against a peer’s del: raises SandboxBeingDestroyedError and tracks nothing', async () => {
    const h = await harness();
    const id = h.provider.sandboxIdFor(T('t'));
    h.backend.startExternal(id);
    expect(await h.peerStore().claim(id, { forDestroy: true })).toBe(true);
    await expect(h.provider.acquire(T('t'))).rejects.toMatchObject({ code: BEING_DESTROYED });
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [], warm: [] });
    expect(h.backend.count('destroy')).toBe(0);
  });

  it('§9.8.162 a discovery that publishes and then finds a teardown reservation raises and installs nothing', async () => {
    const h = await harness();
    const id = h.provider.sandboxIdFor(T('t'));
    h.backend.startExternal(id);
    h.store.pause('take', { times: 1 });
    const acquire = track(h.provider.acquire(T('t')));
    const take = await h.store.nextCall('take');
    h.store.pause('claim', { times: 1 });
    const destroy = track(h.provider.destroy(id)); // reserves the untracked id
    const claim = await h.store.nextCall('claim');
    await take.release();
    await expect(acquire.promise).rejects.toMatchObject({ code: BEING_DESTROYED });
    expect(h.provider.get(id)).toBeUndefined();
    expect(h.backend.clients.at(-1)?.closed).toBe(true);
    await claim.release();
    await destroy.promise;
  });

  it('§9.8.166 a discovery whose publish fails closes the client it created', async () => {
    const h = await harness();
    const id = h.provider.sandboxIdFor(T('t'));
    h.backend.startExternal(id);
    h.faults.fail('take');
    await expect(h.provider.acquire(T('t'))).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(h.backend.clients.at(-1)?.closed).toBe(true);
    expect(h.backend.isRunning(id)).toBe(true); // not ours to stop
  });

  it('§9.8.172 reclaiming an entry already reserved for teardown does no health check and no take', async () => {
    const h = await harness();
    const id = await warmSandbox(h);
    h.store.pause('claim', { times: 1 });
    const evict = track(h.provider.evictOldestWarm());
    const claim = await h.store.nextCall('claim');
    const health = h.backend.count('checkHealth', id);
    const takes = h.store.count('take');
    await expect(h.provider.acquire(T('t'))).rejects.toMatchObject({ code: BEING_DESTROYED });
    expect(h.backend.count('checkHealth', id)).toBe(health);
    expect(h.store.count('take')).toBe(takes);
    await claim.release();
    expect(await evict.promise).toBe(id);
  });
});

describe('get, release, destroy, shutdown, reset', () => {
  it('§9.7.113 get() never calls the backend or the store, even with a store that blocks forever', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const forever = new Promise<never>(() => undefined);
    for (const m of ['take', 'claim', 'renew', 'release', 'owner'] as const) {
      h.faults.inner[m as 'take'] = () => forever;
    }
    const backendCalls = h.backend.calls.length;
    const storeCalls = h.store.calls().length;
    for (let i = 0; i < 100; i++) expect(h.provider.get(id)?.id).toBe(id);
    expect(h.provider.get('ffffffffffffffff')).toBeUndefined();
    expect(h.backend.calls.length).toBe(backendCalls);
    expect(h.store.calls().length).toBe(storeCalls);
    for (const m of ['take', 'claim', 'renew', 'release', 'owner'] as const) {
      delete (h.faults.inner as unknown as Record<string, unknown>)[m];
    }
  });

  it('§9.7.110 release closes the client and parks warm; a close error is logged and parking still happens', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const client = clientOf(h, id);
    client.failClose = new Error('socket boom');
    await h.provider.release(id);
    expect(client.closed).toBe(true);
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [], warm: [id] });
    expect(h.logger.has('warn', `Error closing sandbox ${id} during release`)).toBe(true);
    expect(h.backend.isRunning(id)).toBe(true);
  });

  it('§9.7.111 destroy closes the client, stops the container once and untracks it; a close error does not stop it', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const client = clientOf(h, id);
    client.failClose = new Error('socket boom');
    await h.provider.destroy(id);
    expect(client.closed).toBe(true);
    expect(h.backend.count('destroy', id)).toBe(1);
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [], warm: [], threads: {} });
    expect(h.logger.has('warn', `Error closing sandbox ${id} during destroy`)).toBe(true);
    expect(h.lease(id)).toBeUndefined();
  });

  it('a release during a teardown in flight leaves the sandbox to that teardown (it is still stopped)', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    h.store.pause('claim', { times: 1 });
    const destroy = track(h.provider.destroy(id));
    const claim = await h.store.nextCall('claim');
    await h.provider.release(id);
    await claim.release();
    await destroy.promise;
    expect(h.backend.isRunning(id)).toBe(false);
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [], warm: [] });
  });

  it('§9.8.146 destroy() with a failing stop re-raises but leaves no del: marker', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    h.backend.failDestroy = new Error('engine gone');
    await expect(h.provider.destroy(id)).rejects.toThrow('engine gone');
    expect(h.lease(id)).toBeUndefined();
    h.backend.failDestroy = undefined;
    expect(await h.peerStore().take(id)).toBe(true);
  });

  it('§9.8.147 the teardown join budget exceeds two store operations (10 s)', () => {
    expect(TEARDOWN_JOIN_TIMEOUT_MS).toBeGreaterThan(10_000);
  });

  it('§9.8.153 the heartbeat is gone after the stop; the lease is released, nothing refreshes it', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    await h.provider.destroy(id);
    const claims = h.store.count('claim');
    await h.clock.advance(10 * 30_000);
    expect(h.store.count('claim')).toBe(claims);
    expect(h.lease(id)).toBeUndefined();
  });

  it('§9.7.112 shutdown closes active clients and destroys them; later acquires fail', async () => {
    const h = await harness();
    const a = await h.provider.acquire(T('a'));
    const b = await h.provider.acquire(T('b'));
    const clients = [clientOf(h, a), clientOf(h, b)];
    await h.provider.shutdown();
    await h.provider.shutdown(); // idempotent
    expect(clients.every((c) => c.closed)).toBe(true);
    expect(h.backend.isRunning(a)).toBe(false);
    expect(h.backend.isRunning(b)).toBe(false);
    await expect(h.provider.acquire(T('c'))).rejects.toMatchObject({ code: 'PROVIDER_CLOSED' });
  });

  it('shutdown stops only what this instance owns; a peer-owned active sandbox is only closed', async () => {
    const h = await harness();
    const mine = await h.provider.acquire(T('a'));
    const theirs = await h.provider.acquire(T('b'));
    expect(await h.peerStore().take(theirs)).toBe(true);
    const client = clientOf(h, theirs);
    await h.provider.shutdown();
    expect(h.backend.isRunning(mine)).toBe(false);
    expect(h.backend.isRunning(theirs)).toBe(true);
    expect(client.closed).toBe(true);
  });

  it('shutdown waits for an acquire in flight and stops what it produced', async () => {
    const h = await harness();
    h.backendGate.pause('create', { times: 1 });
    const acquire = track(h.provider.acquire(T('t')));
    const create = await h.backendGate.nextCall('create');
    const shutdown = track(h.provider.shutdown());
    await settle();
    expect(shutdown.settled).toBe(false);
    await create.release();
    const id = await acquire.promise;
    await shutdown.promise;
    expect(h.backend.isRunning(id)).toBe(false);
  });

  it('reset() hands everything over: no container touched, leases given up, further use refused', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    expect(h.lease(id)).toBe(`own:${h.ownerId}`);
    await h.provider.reset();
    await h.provider.reset();
    await expect(h.provider.acquire(T('t'))).rejects.toBeInstanceOf(ProviderClosedError);
    await expect(h.provider.acquire()).rejects.toBeInstanceOf(ProviderClosedError);
    expect(h.backend.isRunning(id)).toBe(true);
    expect(h.provider.get(id)).toBeUndefined();
    expect(h.lease(id)).toBeUndefined();
    await h.provider.shutdown();
    expect(h.backend.isRunning(id)).toBe(true);
  });

  it('#16 bug 3: after reset() the detached provider stops no container a replacement now serves', async () => {
    const h = await harness({ background: true });
    const id = await warmSandbox(h, 'handover');
    await h.provider.reset();
    // The replacement: same backend, its own memory store (as a default provider rebuilt in the
    // same process gets), so it adopts the parked container at once and hands it out.
    const next = await harness({
      background: true,
      backend: h.backend,
      backendGate: h.backendGate,
      clock: h.clock,
      table: new MemoryLeaseTable({ clock: h.clock }),
    });
    await next.provider.reconcile();
    expect(await next.provider.acquire(T('handover'))).toBe(id);
    // Past the old instance's warm expiry (idle_timeout 600 s from its release), inside the
    // replacement's own idle limit for the sandbox it handed out just now.
    await h.clock.advance(300_000);
    await next.provider.acquire(T('handover'));
    await h.clock.advance(400_000);
    expect(h.backend.isRunning(id)).toBe(true);
    expect(h.provider.renewalRunning).toBe(false);
    expect(h.provider.idleCheckerRunning).toBe(false);
  });

  it('anonymous acquires get a random id, no thread mapping, and are parked on release', async () => {
    const h = await harness();
    const id = await h.provider.acquire();
    expect(id).toMatch(/^[0-9a-f]{8}$/);
    expect(h.provider.stateSnapshot().threads).toEqual({});
    expect(h.backend.containers.get(id)!.request!.threadId).toBeNull();
    await h.provider.release(id);
    expect(h.provider.stateSnapshot().warm).toEqual([id]);
  });

  it('reports counts and acquire paths as events', async () => {
    const h = await harness();
    const b = await peerOf(h);
    const events: string[] = [];
    h.provider.onEvent((e) => events.push(e.type === 'acquire' ? `acquire:${e.path}` : e.type));
    const id = await h.provider.acquire(T('t'));
    await h.provider.acquire(T('t'));
    await h.provider.release(id);
    await h.provider.acquire(T('t'));
    await h.provider.release(id);
    await b.provider.acquire(T('t')); // b takes the lease; h forgets on its next renewal
    await h.provider.renewLeases();
    await h.provider.acquire(T('t'));
    expect(events).toEqual([
      'acquire:create',
      'acquire:reuse',
      'acquire:reclaim',
      'acquire:discover',
    ]);
    expect(h.provider.sandboxCounts()).toEqual({ active: 1, warm: 0 });
  });
});

describe('lease manager and command scopes', () => {
  it('only the last holder parks; every holder’s command scope is released on the client', async () => {
    const h = await harness();
    const manager = getSandboxLeaseManager(h.provider);
    const id = await manager.acquire('lead', T('t'));
    expect(await manager.acquire('subagent', T('t'))).toBe(id);
    const client = clientOf(h, id);
    await manager.release('subagent');
    expect(client.releasedScopes).toEqual(['subagent']);
    expect(h.provider.stateSnapshot().active).toEqual([id]);
    await manager.release('lead');
    expect(client.releasedScopes).toEqual(['subagent', 'lead']);
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [], warm: [id] });
  });
});

describe('reaping', () => {
  it('§9.7.118 the idle pass stops idle active sandboxes through the guarded destroy, then expired warm ones', async () => {
    const h = await harness();
    const warm = await warmSandbox(h, 'w');
    const active = await h.provider.acquire(T('a'));
    await h.clock.advance(601_000);
    await h.provider.runIdleCheck();
    expect(h.backend.calls.filter((c) => c.method === 'destroy').map((c) => c.sandboxId)).toEqual([
      active,
      warm,
    ]);
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [], warm: [] });
  });

  it('§9.8.156 an idle warm reap refused by a peer keeps the warm entry', async () => {
    const h = await harness();
    const id = await warmSandbox(h);
    await h.clock.advance(601_000);
    expect(await h.peerStore().take(id)).toBe(true);
    expect(await h.provider.reapExpiredWarm()).toEqual([]);
    expect(h.provider.stateSnapshot().warm).toEqual([id]);
    expect(h.backend.isRunning(id)).toBe(true);
  });

  it('§9.8.157 the unhealthy drop of a peer-owned container does not stop it; the lease stays the peer’s', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const peer = h.peerStore();
    expect(await peer.take(id)).toBe(true);
    h.backend.healthOverride.set(id, 'dead');
    // Not answering either, so the acquire cannot take it over through discovery afterwards.
    h.backend.containers.get(id)!.ready = false;
    await expect(h.provider.acquire(T('t'))).rejects.toThrow(/failed to become ready/);
    expect(h.backend.count('destroy')).toBe(0);
    expect(h.backend.isRunning(id)).toBe(true);
    expect(h.lease(id)).toBe(`own:${peer.ownerId}`);
    expect(h.logger.has('warn', `Dropped unhealthy sandbox ${id}`)).toBe(true);
  });

  it('§9.7.116 an unhealthy drop with a stale info changes nothing (see race row 26)', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const current = clientOf(h, id);
    h.backend.kill(id);
    h.backend.containers.delete(id);
    // The thread's next turn finds it dead and recreates it; the recreated entry is what is tracked.
    expect(await h.provider.acquire(T('t'))).toBe(id);
    expect(current.closed).toBe(true);
    const fresh = clientOf(h, id);
    expect(fresh).not.toBe(current);
    expect(fresh.closed).toBe(false);
  });
});

describe('renewal', () => {
  it('§9.8.137 the renewal loop renews active and warm leases', async () => {
    const h = await harness({ background: true });
    const a = await h.provider.acquire(T('a'));
    const w = await warmSandbox(h, 'w');
    const before = h.store.count('renew');
    await h.clock.advance(30_000);
    const renewed = h.store
      .calls('renew')
      .slice(before)
      .map((c) => c.args[0]);
    expect(renewed.sort()).toEqual([a, w].sort());
  });

  it('§9.8.139 a lost lease drops the sandbox from every map, closes the client once and stops nothing', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('t'));
    const client = clientOf(h, id);
    const peer = h.peerStore();
    expect(await peer.take(id)).toBe(true);
    await h.provider.renewLeases();
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [], warm: [], threads: {} });
    await settle();
    expect(client.closeCount).toBe(1);
    expect(h.backend.isRunning(id)).toBe(true);
    expect(h.lease(id)).toBe(`own:${peer.ownerId}`);
  });
});

describe('reconciliation', () => {
  it('§9.8.126 unowned containers of any age (created_at 0 too) are adopted warm, never destroyed', async () => {
    const h = await harness({ config: { idle_timeout: 0 } });
    const old = h.backend.startExternal('00000000000000aa');
    h.backend.startExternal('00000000000000bb');
    (h.backend.containers.get(old.sandboxId)!.info as { createdAt: number }).createdAt = 0;
    const summary = await h.provider.reconcile();
    expect(summary.adopted.sort()).toEqual(['00000000000000aa', '00000000000000bb']);
    expect(h.provider.stateSnapshot().warm.toSorted()).toEqual([
      '00000000000000aa',
      '00000000000000bb',
    ]);
    expect(h.backend.count('destroy')).toBe(0);
    expect(h.lease('00000000000000aa')).toBe(`own:${h.ownerId}`);
  });

  it('§9.8.127 tracked containers are not re-adopted; a failed or empty listing is harmless', async () => {
    const h = await harness();
    const a = await h.provider.acquire(T('a'));
    const w = await warmSandbox(h, 'w');
    expect((await h.provider.reconcile()).adopted).toEqual([]);
    expect(h.provider.stateSnapshot()).toMatchObject({ active: [a], warm: [w] });
    h.backend.failList = new Error('engine down');
    expect(await h.provider.reconcile()).toMatchObject({ adopted: [], total: 0 });
    h.backend.failList = undefined;
    h.backend.containers.clear();
    expect(await h.provider.reconcile()).toMatchObject({ adopted: [], total: 0 });
  });

  it('§9.8.128 a peer-owned container is not adopted and its lease stays the peer’s', async () => {
    const h = await harness();
    h.backend.startExternal('00000000000000cc');
    const peer = h.peerStore();
    expect(await peer.take('00000000000000cc')).toBe(true);
    expect((await h.provider.reconcile()).skipped).toEqual(['00000000000000cc']);
    expect(h.lease('00000000000000cc')).toBe(`own:${peer.ownerId}`);
  });

  it('§9.8.129 release → peer reconcile → peer reap cannot kill the releasing instance’s container', async () => {
    const a = await harness();
    const b = await peerOf(a);
    const id = await warmSandbox(a);
    expect((await b.provider.reconcile()).adopted).toEqual([]);
    await a.clock.advance(601_000);
    expect(await b.provider.reapExpiredWarm()).toEqual([]);
    expect(a.backend.isRunning(id)).toBe(true);
  });

  it('§9.8.130 a crashed owner’s container is not adopted at once, but after one TTL of grace', async () => {
    const h = await harness({ crossProcess: true });
    const id = h.backend.startExternal('00000000000000dd').sandboxId;
    const crashed = h.peerStore('crashed');
    expect(await crashed.take(id)).toBe(true);
    expect((await h.provider.reconcile()).deferred).toEqual([id]);
    await h.clock.advance(120_000); // the crashed owner's lease lapses
    expect((await h.provider.reconcile()).adopted).toEqual([]); // grace starts now
    await h.clock.advance(119_999);
    expect((await h.provider.reconcile()).adopted).toEqual([]);
    await h.clock.advance(1);
    expect((await h.provider.reconcile()).adopted).toEqual([id]);
    expect(h.lease(id)).toBe(`own:${h.ownerId}`);
  });

  it('stops at its item budget; the rest waits for the next pass', async () => {
    const h = await harness({ config: { aio: { reconcile_max_items: 2 } } });
    for (const id of ['00000000000000e1', '00000000000000e2', '00000000000000e3']) {
      h.backend.startExternal(id);
    }
    const first = await h.provider.reconcile();
    expect(first).toMatchObject({ budgetExhausted: true });
    expect(first.adopted).toHaveLength(2);
    const second = await h.provider.reconcile();
    expect(second.adopted).toHaveLength(1);
    expect(second.budgetExhausted).toBe(false);
  });

  it('runs at start-up and on its own interval, also with idle_timeout 0', async () => {
    const backend = new MemorySandboxBackend();
    backend.startExternal('00000000000000f1');
    const h = await harness({ backend, background: true, config: { idle_timeout: 0 } });
    expect(h.provider.stateSnapshot().warm).toEqual(['00000000000000f1']);
    backend.startExternal('00000000000000f2');
    await h.clock.advance(60_000);
    expect(h.provider.stateSnapshot().warm.toSorted()).toEqual([
      '00000000000000f1',
      '00000000000000f2',
    ]);
  });
});
