import {
  ConfigError,
  MissingDependencyError,
  ProviderClosedError,
  SandboxRuntimeError,
} from '@sbx/core';
import { disposedAfterEach, rejectionOf, settle, track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import type { FakeExecCall } from './testing/fake-tenki-client.js';
import { FakeTenkiClient, errnoError } from './testing/fake-tenki-client.js';
import { harness as makeHarness, tenkiConfig } from './testing/harness.js';
import type { TenkiClientOptions } from './tenki-client.js';
import { BOOTSTRAP_MARKER } from './tenki-bootstrap.js';
import { TenkiSandboxProvider } from './tenki-provider.js';

const harness = disposedAfterEach(makeHarness);

const isBootstrap = (c: FakeExecCall) => String(c.argv[2]).includes(BOOTSTRAP_MARKER);

describe('§8.7 Tenki provider', () => {
  it('§8.7.137 a missing client module fails at acquire naming it; shutdown is idempotent', async () => {
    const provider = new TenkiSandboxProvider({
      config: tenkiConfig({ tenki: { client_module: '@acme/tenki-client' } }),
      importer: async (name) => {
        throw Object.assign(new Error(`Cannot find package '${name}'`), {
          code: 'ERR_MODULE_NOT_FOUND',
        });
      },
    });
    const err = await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }));
    expect(err).toBeInstanceOf(MissingDependencyError);
    expect((err as MissingDependencyError).packageName).toBe('@acme/tenki-client');
    await provider.shutdown();
    await provider.shutdown();
  });

  it('a client module that failed to load is imported again by the next acquire', async () => {
    const client = new FakeTenkiClient();
    let imports = 0;
    const provider = new TenkiSandboxProvider({
      config: tenkiConfig({ tenki: { client_module: '@acme/tenki-client' } }),
      importer: async (name) => {
        imports += 1;
        if (imports === 1) {
          throw Object.assign(new Error(`Cannot find package '${name}'`), {
            code: 'ERR_MODULE_NOT_FOUND',
          });
        }
        return { createTenkiClient: () => client };
      },
    });
    expect(await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }))).toBeInstanceOf(
      MissingDependencyError,
    );
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    expect(provider.get(id)).toBeDefined();
    expect(imports).toBe(2);
    await provider.shutdown();
    await client.dispose();
  });

  it('§8.7.137 without a client or a client module, acquire explains what to configure', async () => {
    const provider = new TenkiSandboxProvider({ config: tenkiConfig() });
    const err = await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }));
    expect(err).toBeInstanceOf(SandboxRuntimeError);
    expect((err as Error).message).toContain('client_module');
    await provider.shutdown();
  });

  it('loads a client module’s createTenkiClient (or default) factory with api_key and base_url', async () => {
    const seen: TenkiClientOptions[] = [];
    const client = new FakeTenkiClient();
    for (const shape of ['named', 'default'] as const) {
      const factory = (o: TenkiClientOptions) => {
        seen.push(o);
        return client;
      };
      const provider = new TenkiSandboxProvider({
        config: tenkiConfig({
          tenki: {
            client_module: `tenki-${shape}`,
            api_key: 'k-123',
            base_url: 'http://127.0.0.1:9',
          },
        }),
        importer: async () =>
          shape === 'named' ? { createTenkiClient: factory } : { default: factory },
      });
      const id = await provider.acquire({ userId: 'u', threadId: shape });
      expect(provider.get(id)).toBeDefined();
      await provider.shutdown();
    }
    expect(seen).toEqual([
      { apiKey: 'k-123', baseUrl: 'http://127.0.0.1:9' },
      { apiKey: 'k-123', baseUrl: 'http://127.0.0.1:9' },
    ]);
    await client.dispose();
  });

  it('release ends the background processes of the turn and parks the microVM for the next one', async () => {
    const h = harness();
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    const server = await h.provider.get(id)!.processes.start('sleep 300');
    await h.provider.release(id);
    expect(server.info().status).toBe('exited');
    expect(h.provider.warmIds).toEqual([id]);
    const again = h.provider.get(await h.provider.acquire({ userId: 'u', threadId: 't' }))!;
    expect(await (await again.processes.start('echo next')).wait()).toMatchObject({ exitCode: 0 });
  });

  it('§8.7.150 ids are 16 hex, deterministic, distinct per user and thread; idle_timeout 0 starts no reaper', () => {
    const { provider } = harness({ idle_timeout: 0 });
    const id = provider.sandboxIdFor('u', 't');
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(provider.sandboxIdFor('u', 't')).toBe(id);
    expect(provider.sandboxIdFor('v', 't')).not.toBe(id);
    expect(provider.sandboxIdFor('u', 'x')).not.toBe(id);
    expect(provider.idleCheckerRunning).toBe(false);
    expect(harness().provider.idleCheckerRunning).toBe(true);
  });

  it('§8.7.151 a bad environment key fails construction; a good one is kept and reaches the VM', async () => {
    const good = tenkiConfig({ environment: { GOOD_KEY: 'v' } });
    expect(
      () => new TenkiSandboxProvider({ config: { ...good, environment: { 'BAD-KEY': 'x' } } }),
    ).toThrow(ConfigError);
    const h = harness({ environment: { GOOD_KEY: 'v' } });
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(h.client.createCalls[0]?.env).toEqual({ GOOD_KEY: 'v' });
    expect(await h.provider.get(id)!.executeCommand('echo $GOOD_KEY')).toBe('v\n');
  });

  it('§8.7.152 create passes a prefixed name and only the workspace id (null when omitted)', async () => {
    const h = harness();
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(h.client.createCalls[0]).toMatchObject({ name: `sbx-tenki-${id}`, workspaceId: null });
    expect(h.client.createCalls[0]).not.toHaveProperty('projectId');
    const ref = harness({ tenki: { name_prefix: 'deer-flow-tenki-', workspace_id: 'ws-1' } });
    const id2 = await ref.provider.acquire({ userId: 'u', threadId: 't' });
    expect(ref.client.createCalls[0]).toMatchObject({
      name: `deer-flow-tenki-${id2}`,
      workspaceId: 'ws-1',
    });
  });

  it('§8.7.153 create does not wait, then waits for readiness once; max_duration and sticky are passed', async () => {
    const h = harness({ tenki: { cpu_cores: 2, memory_mb: 2048, image: 'img-1' } });
    await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(h.client.createCalls[0]).toMatchObject({
      wait: false,
      sticky: false,
      maxDurationSeconds: 14_400,
      image: 'img-1',
      cpuCores: 2,
      memoryMb: 2048,
    });
    expect(h.client.createCalls[0]).not.toHaveProperty('env');
    expect(h.client.sandboxes[0]?.waitReadyCalls).toEqual([180]);

    const custom = harness({ tenki: { max_duration: 600, sticky: true } });
    await custom.provider.acquire({ userId: 'u', threadId: 't' });
    expect(custom.client.createCalls[0]).toMatchObject({ maxDurationSeconds: 600, sticky: true });
    const unlimited = harness({ tenki: { max_duration: 0 } });
    await unlimited.provider.acquire({ userId: 'u', threadId: 't' });
    expect(unlimited.client.createCalls[0]).not.toHaveProperty('maxDurationSeconds');
  });

  it('§8.7.154 a readiness failure terminates the new microVM and fails the acquire; nothing is registered', async () => {
    const h = harness();
    h.client.prepareNext.push((s) => {
      s.readyFailure = new Error('boot timeout');
    });
    const err = await rejectionOf(h.provider.acquire({ userId: 'u', threadId: 't' }));
    expect(err).toBeInstanceOf(SandboxRuntimeError);
    expect((err as Error).message).toContain('boot timeout');
    expect(h.client.sandboxes[0]?.terminated).toBe(true);
    expect(h.provider.activeIds).toEqual([]);
    expect(h.client.execCalls).toEqual([]);
  });

  it('§8.7.154 a microVM that can be neither readied nor terminated is reported as a possible leak', async () => {
    const h = harness();
    h.client.prepareNext.push((s) => {
      s.readyFailure = new Error('boot timeout');
      s.terminateFailures.push(new Error('UNAVAILABLE'));
    });
    await rejectionOf(h.provider.acquire({ userId: 'u', threadId: 't' }));
    expect(h.logger.lines.some((l) => l.level === 'error' && l.msg.includes('may leak'))).toBe(
      true,
    );
  });

  it('§8.7.155 a failed bootstrap only warns; the sandbox is usable', async () => {
    const h = harness();
    h.client.prepareNext.push((s) => s.execFailures.push(new Error('exec failed')));
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(h.logger.lines.some((l) => l.level === 'warn' && l.msg.includes('bootstrap'))).toBe(
      true,
    );
    expect(await h.provider.get(id)!.executeCommand('echo usable')).toBe('usable\n');
  });

  it('§8.7.156 the bootstrap uses `sudo -n ln -sfn` and exactly a 30 s timeout', async () => {
    const h = harness({}, {}, { userDataLink: false });
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    const bootstrap = h.client.execCalls.find(isBootstrap);
    expect(bootstrap?.options.timeoutSeconds).toBe(30);
    expect(String(bootstrap?.argv[2])).toContain('sudo -n ln -sfn /home/tenki /mnt/user-data');
    // Without sudo in the VM the link is skipped, but HOME is prepared and file calls still work.
    const sandbox = h.provider.get(id)!;
    await sandbox.writeFile('/mnt/user-data/workspace/a.txt', 'a');
    expect(await sandbox.listDir('/mnt/user-data')).toEqual([
      '/mnt/user-data/outputs/',
      '/mnt/user-data/uploads/',
      '/mnt/user-data/workspace/',
      '/mnt/user-data/workspace/a.txt',
    ]);
  });

  it('§8.7.158 a liveness check that hangs fails after its timeout and does not pin the acquire lock', async () => {
    const h = harness();
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    await h.provider.release(id);
    h.client.gate.pause('exec', { times: 1 });
    const acquiring = track(h.provider.acquire({ userId: 'u', threadId: 't' }));
    const hung = await h.client.gate.nextCall('exec');
    expect(hung.args[0]).toMatchObject({
      argv: ['sh', '-c', 'echo ok'],
      options: { timeoutSeconds: 10 },
    });
    await h.clock.advance(9_999);
    await settle();
    expect(acquiring.settled).toBe(false);
    await h.clock.advance(1);
    expect(await acquiring.promise).toBe(id);
    expect(h.client.sandboxes).toHaveLength(2);
    await hung.release();
  });

  it('§8.7.161 shutdown terminates the active VMs and closes the client as well', async () => {
    const h = harness();
    await h.provider.acquire({ userId: 'u', threadId: 't' });
    await h.provider.shutdown();
    expect(h.client.sandboxes[0]?.terminated).toBe(true);
    expect(h.client.closed).toBe(true);
  });

  it('§8.7.162 an explicit workspace_id is forwarded; none is forwarded as null', async () => {
    const h = harness({ tenki: { workspace_id: 'ws-9' } });
    await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(h.client.createCalls[0]?.workspaceId).toBe('ws-9');
  });

  describe('races with teardown', () => {
    it('a thread-less acquire gets an anon- id of its own; its release terminates the VM (nobody can reclaim it)', async () => {
      const h = harness();
      const id = await h.provider.acquire();
      expect(id).toMatch(/^anon-[0-9a-f]{12}$/);
      await h.provider.release(id);
      expect(h.provider.warmIds).toEqual([]);
      expect(h.client.sandboxes[0]?.terminated).toBe(true);
    });

    it('a create that finishes after shutdown began terminates its VM and fails', async () => {
      const h = harness();
      h.client.gate.pause('create', { times: 1 });
      const acquiring = track(h.provider.acquire({ userId: 'u', threadId: 't' }));
      const create = await h.client.gate.nextCall('create');
      await h.provider.shutdown();
      await create.release();
      expect(await rejectionOf(acquiring.promise)).toBeInstanceOf(ProviderClosedError);
      expect(h.provider.activeIds).toEqual([]);
      expect(h.client.sandboxes[0]?.terminated).toBe(true);
    });

    it('no acquire hands a VM out once shutdown has begun, wherever the shutdown lands', async () => {
      // The shutdown is started a few microtasks after the acquire, at every depth in turn, so
      // one of them lands between the grant of the per-id lock and the start of its section.
      for (let depth = 0; depth < 12; depth += 1) {
        const h = harness();
        const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
        let shutdownBegan = false;
        const handedOutAfterShutdown: number[] = [];
        h.provider.onEvent((event) => {
          if (event.type === 'acquire' && shutdownBegan) handedOutAfterShutdown.push(depth);
        });
        const again = h.provider.acquire({ userId: 'u', threadId: 't' }).catch((e: unknown) => e);
        let chain = Promise.resolve();
        for (let i = 0; i < depth; i += 1) chain = chain.then(() => undefined);
        const shuttingDown = chain.then(() => {
          shutdownBegan = true;
          return h.provider.shutdown();
        });
        const outcome = await again;
        await shuttingDown;
        expect(handedOutAfterShutdown).toEqual([]);
        if (outcome !== id) expect(outcome).toBeInstanceOf(ProviderClosedError);
        expect(h.client.sandboxes[0]?.terminated).toBe(true);
      }
    });

    it('a reclaim whose liveness check was still running when shutdown began terminates the VM and fails', async () => {
      const h = harness();
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      await h.provider.release(id);
      h.client.gate.pause('exec', { times: 1 });
      const acquiring = track(h.provider.acquire({ userId: 'u', threadId: 't' }));
      const check = await h.client.gate.nextCall('exec');
      await h.provider.shutdown();
      await check.release();
      expect(await rejectionOf(acquiring.promise)).toBeInstanceOf(ProviderClosedError);
      expect(h.provider.activeIds).toEqual([]);
      expect(h.client.sandboxes[0]?.terminated).toBe(true);
    });

    it('a release whose locked section starts after shutdown began terminates the VM instead of parking it', async () => {
      const h = harness();
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      // Same tick: the release has passed its unlocked shutdown check and waits for the per-id
      // lock when the shutdown starts; its section runs with the provider already closed.
      const releasing = h.provider.release(id);
      const shuttingDown = h.provider.shutdown();
      await Promise.all([releasing, shuttingDown]);
      expect(h.provider.warmIds).toEqual([]);
      expect(h.client.sandboxes[0]?.terminated).toBe(true);
    });

    it('a release while shutdown is under way terminates the VM and does not fail', async () => {
      const h = harness();
      const parked = await h.provider.acquire({ userId: 'u', threadId: 'parked' });
      await h.provider.release(parked);
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      h.client.gate.pause('terminate', { times: 1 });
      const shuttingDown = h.provider.shutdown();
      // Shutdown is stopping the warm VM; the active one is released meanwhile.
      const stopping = await h.client.gate.nextCall('terminate');
      await h.provider.release(id);
      expect(h.client.latest(h.provider.sandboxName(id))?.terminated).toBe(true);
      await stopping.release();
      await shuttingDown;
      expect(h.client.sandboxes.every((s) => s.terminated)).toBe(true);
    });

    it('a release refused parking (the idle checker is terminating the old VM of that id) terminates the new one', async () => {
      const h = harness({ idle_timeout: 60 });
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      await h.provider.release(id);
      h.client.gate.pause('terminate', { times: 1 });
      const reaping = h.clock.advance(120_000);
      const oldTermination = await h.client.gate.nextCall('terminate');
      try {
        // The old VM is reserved for its termination: the acquire cannot reclaim it, so it creates.
        expect(await h.provider.acquire({ userId: 'u', threadId: 't' })).toBe(id);
        const replacement = h.provider.get(id)!;
        await h.provider.release(id);
        expect(h.provider.activeIds).toEqual([]);
        expect(replacement.remote).toMatchObject({ terminated: true });
      } finally {
        await oldTermination.release();
      }
      await reaping;
      expect(h.provider.warmIds).toEqual([]);
      expect(h.client.sandboxes.map((s) => s.terminated)).toEqual([true, true]);
    });

    it('a background process whose launch is still in flight at release is ended with the turn', async () => {
      const h = harness();
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      h.client.gate.pause('start', { times: 1 });
      const starting = h.provider.get(id)!.processes.start('sleep 300');
      const launch = await h.client.gate.nextCall('start');
      const releasing = h.provider.release(id);
      await settle();
      await launch.release();
      const server = await starting;
      await releasing;
      expect(server.info().status).toBe('exited');
      expect(h.client.sandboxes[0]?.signals).toEqual(['SIGKILL']);
      expect(h.provider.warmIds).toEqual([id]);
    });

    it('a connection reset during a download evicts the VM', async () => {
      const h = harness();
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      const sandbox = h.provider.get(id)!;
      await sandbox.updateFile('/mnt/user-data/outputs/f.bin', new Uint8Array(300_000));
      h.client.sandboxes[0]!.streamFailure = {
        afterBytes: 100_000,
        error: errnoError('ECONNRESET'),
      };
      expect(
        await rejectionOf(sandbox.downloadFile('/mnt/user-data/outputs/f.bin')),
      ).toBeInstanceOf(SandboxRuntimeError);
      expect(h.provider.get(id)).toBeUndefined();
    });
  });

  it('rejects an explicit skill policy before creating anything; reports its flags', async () => {
    const h = harness();
    await rejectionOf(
      h.provider.acquire({ userId: 'u', threadId: 't', skillPolicy: { allowedSkills: [] } }),
    );
    expect(h.client.createCalls).toEqual([]);
    expect(h.provider.usesThreadDataMounts).toBe(false);
    expect(h.provider.needsUploadPermissionAdjustment).toBe(true);
  });

  it('rejects unknown or malformed sandbox.tenki keys, all at once', () => {
    let err: unknown;
    try {
      new TenkiSandboxProvider({
        config: tenkiConfig({ tenki: { sticky: 'yes', max_duration: -1, projct_id: 'p' } }),
      });
    } catch (e) {
      err = e;
    }
    expect((err as ConfigError).issues.map((i) => i.path).sort()).toEqual([
      'sandbox.tenki.max_duration',
      'sandbox.tenki.projct_id',
      'sandbox.tenki.sticky',
    ]);
  });
});
