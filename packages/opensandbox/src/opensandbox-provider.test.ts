import { ProviderClosedError, SandboxRuntimeError, parseSandboxConfig } from '@sbx/core';
import { deriveSandboxScopeToken } from '@sbx/core/provider-kit';
import type { Logger } from '@sbx/core';
import { Deferred, ManualClock, rejectionOf, settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenSandboxProviderConfig } from './opensandbox-config.js';
import {
  OpenSandboxProvider,
  PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE,
} from './opensandbox-provider.js';
import { fakeExecution } from './testing/execd-output.js';
import { FakeOpenSandbox } from './testing/fake-opensandbox-sdk.js';
import { fakeApiError } from './testing/fake-sdk-errors.js';

interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown> | undefined;
}

function capturingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      lines.push({ level, msg, fields });
    };
  return {
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    lines,
  };
}

const SECURE = { domain: 'opensandbox.test', protocol: 'https', api_key: 'k' };
const fakes: FakeOpenSandbox[] = [];
const providers: OpenSandboxProvider[] = [];

afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.shutdown()));
  await Promise.all(fakes.splice(0).map((f) => f.dispose()));
});

function setup(
  config: OpenSandboxProviderConfig = {},
  env: Record<string, string | undefined> = {},
) {
  const fake = new FakeOpenSandbox();
  fakes.push(fake);
  const clock = new ManualClock(1_000_000);
  const { logger, lines } = capturingLogger();
  const provider = new OpenSandboxProvider({
    config: { ...config, opensandbox: config.opensandbox ?? SECURE },
    sdk: fake.sdk,
    clock,
    logger,
    env,
  });
  providers.push(provider);
  const remoteOf = (id: string): string => {
    const sandbox = provider.get(id);
    if (sandbox === undefined) throw new Error(`${id} is not active`);
    return sandbox.remoteId;
  };
  return { fake, provider, clock, lines, remoteOf };
}

const isHealthProbe = (command: string): boolean => command === 'true';

describe('OpenSandboxProvider create', () => {
  it('a per-acquire spec: labels become metadata under sbx’s tags; resources are limits and part of the id', async () => {
    const { fake, provider } = setup();
    const labelled = await provider.acquire({
      userId: 'u1',
      threadId: 'labelled',
      spec: { labels: { 'sbx.dev/tenant': 'acme', deer_flow_thread: 'someone-else' } },
    });
    expect(fake.creates[0]!.options.metadata).toMatchObject({
      'sbx.dev/tenant': 'acme',
      deer_flow_provider: 'opensandbox',
      deer_flow_thread: 'labelled',
    });
    await expect(
      provider.acquire({ userId: 'u1', threadId: 'x', spec: { image: 'other:1' } }),
    ).rejects.toMatchObject({ code: 'SANDBOX_SPEC' });
    const sized = await provider.acquire({
      userId: 'u1',
      threadId: 'labelled',
      spec: { resources: { cpus: 2, memoryMb: 1024 } },
    });
    expect(sized).not.toBe(labelled);
    expect(fake.creates[1]!.options.resource).toEqual({ cpu: '2', memory: '1024Mi' });
  });

  it('§8.8.164 create forwards image, lifetime, ready timeout, resolved environment, metadata and a connection config; no warning for HTTPS', async () => {
    const config = parseSandboxConfig(
      {
        use: '@sbx/opensandbox',
        image: 'sbx-image:1',
        environment: { FROM_HOST: '$HOST_VAR', UNSET: '$NOT_SET', PLAIN: 'p' },
        opensandbox: {
          api_key: 'key-1',
          domain: 'sandbox.example.com',
          protocol: 'https',
          request_timeout: 12,
          ready_timeout: 7,
          use_server_proxy: true,
          sandbox_timeout: 900,
        },
      },
      { env: { HOST_VAR: 'from-host' } },
    );
    const { fake, provider, lines } = setup(config);
    const id = await provider.acquire({ userId: 'alice', threadId: 't1' });
    expect(id).toBe(deriveSandboxScopeToken({ userId: 'alice', threadId: 't1' }));
    expect(fake.creates).toHaveLength(1);
    expect(fake.creates[0]!.options).toMatchObject({
      image: 'sbx-image:1',
      timeoutSeconds: 900,
      readyTimeoutSeconds: 7,
      env: { FROM_HOST: 'from-host', UNSET: '', PLAIN: 'p' },
      metadata: {
        deer_flow_provider: 'opensandbox',
        deer_flow_thread: 't1',
        deer_flow_user: 'alice',
      },
    });
    expect(fake.connectionOptions[0]).toEqual({
      apiKey: 'key-1',
      domain: 'sandbox.example.com',
      protocol: 'https',
      requestTimeoutSeconds: 12,
      useServerProxy: true,
      disableMetrics: false,
    });
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    // Bootstrap: the user-data directories, with a 30 s limit and the static environment.
    expect(fake.runs[0]).toMatchObject({
      options: { timeoutSeconds: 30, envs: { FROM_HOST: 'from-host', UNSET: '', PLAIN: 'p' } },
    });
    const machine = fake.remote(provider.get(id)!.remoteId).machine;
    for (const dir of [
      '/mnt/user-data/workspace',
      '/mnt/user-data/uploads',
      '/mnt/user-data/outputs',
    ]) {
      expect(await machine.exists(dir)).toBe(true);
    }
  });

  it('§8.8.165 missing key and domain warn about an unauthenticated localhost:8080', () => {
    const { lines } = setup({ opensandbox: {} });
    expect(
      lines
        .filter((l) => l.level === 'warn')
        .map((l) => l.msg)
        .join('\n'),
    ).toContain('unauthenticated localhost:8080');
  });

  it('§8.8.165 a remote plain-HTTP domain warns, and the key appears in no log line', async () => {
    const { provider, lines } = setup({
      opensandbox: { api_key: 'secret-key-xyz', domain: 'sandbox.example.com', protocol: 'http' },
    });
    expect(
      lines.some(
        (l) => l.level === 'warn' && l.msg.includes('remote OpenSandbox domain uses HTTP'),
      ),
    ).toBe(true);
    await provider.acquire({ userId: 'u', threadId: 't' });
    await provider.shutdown();
    expect(JSON.stringify(lines)).not.toContain('secret-key-xyz');
  });

  it('§8.8.166 sandbox_timeout: null creates with the 4 h default; 0 creates without a lifetime', async () => {
    const a = setup({ opensandbox: { ...SECURE, sandbox_timeout: null } });
    await a.provider.acquire({ userId: 'u', threadId: 't' });
    expect(a.fake.creates[0]!.options.timeoutSeconds).toBe(14_400);
    const b = setup({ opensandbox: { ...SECURE, sandbox_timeout: 0 } });
    await b.provider.acquire({ userId: 'u', threadId: 't' });
    expect(b.fake.creates[0]!.options.timeoutSeconds).toBeNull();
  });

  for (const [label, result] of [
    ['exit 17', fakeExecution({ exitCode: 17 })],
    ['no exit code', fakeExecution({ exitCode: null })],
  ] as const) {
    it(`§8.8.167 a bootstrap failure (${label}) deletes the created remote and registers nothing`, async () => {
      const { fake, provider } = setup();
      fake.respondTo('mkdir -p', () => result);
      const err = await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }));
      expect(err).toBeInstanceOf(SandboxRuntimeError);
      expect((err as Error).message).toContain('OpenSandbox bootstrap failed: ');
      expect(fake.remote('fake-1')).toMatchObject({ alive: false, kills: 1, closes: 1 });
      expect(provider.activeIds).toEqual([]);
      expect(provider.replicaCount().total).toBe(0);
    });
  }

  it('a failed create registers nothing and the next acquire tries again', async () => {
    const { fake, provider } = setup();
    fake.failNext('create', fakeApiError(500, 'no capacity'));
    expect(await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }))).toBeDefined();
    expect(provider.activeIds).toEqual([]);
    await provider.acquire({ userId: 'u', threadId: 't' });
    expect(fake.creates).toHaveLength(1);
  });
});

describe('OpenSandboxProvider reuse', () => {
  it('§8.8.168 the same scope reuses its sandbox, renewing once with 4 h; other users and threads get their own remote and config', async () => {
    const { fake, provider } = setup();
    const a = await provider.acquire({ userId: 'u1', threadId: 't1' });
    expect(await provider.acquire({ userId: 'u1', threadId: 't1' })).toBe(a);
    expect(fake.creates).toHaveLength(1);
    expect(fake.renewCalls()).toEqual([14_400]);
    const otherThread = await provider.acquire({ userId: 'u1', threadId: 't2' });
    const otherUser = await provider.acquire({ userId: 'u2', threadId: 't1' });
    expect(new Set([a, otherThread, otherUser]).size).toBe(3);
    expect(fake.creates).toHaveLength(3);
    expect(new Set(fake.creates.map((c) => c.options.connectionConfig)).size).toBe(3);
  });

  it('§8.8.169 a terminal (410) renewal failure of an active sandbox rebuilds it within the same acquire', async () => {
    const { fake, provider, remoteOf } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const first = remoteOf(id);
    fake.failNext('renew', fakeApiError(410, 'expired'));
    expect(await provider.acquire({ userId: 'u', threadId: 't' })).toBe(id);
    expect(remoteOf(id)).not.toBe(first);
    expect(fake.creates).toHaveLength(2);
    await settle();
    expect(fake.remote(first)).toMatchObject({ kills: 1, closes: 1 });
  });

  it('§8.8.169 a non-terminal renewal failure propagates and keeps the sandbox', async () => {
    const { fake, provider } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const sandbox = provider.get(id);
    fake.failNext('renew', fakeApiError(500, 'lifecycle hiccup'));
    expect(await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }))).toBeInstanceOf(
      SandboxRuntimeError,
    );
    expect(provider.get(id)).toBe(sandbox);
    expect(sandbox?.closed).toBe(false);
    expect(fake.creates).toHaveLength(1);
  });

  it('§8.8.170 a warm reclaim checks the sandbox with `true` and a 10 s timeout', async () => {
    const { fake, provider } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    await provider.release(id);
    expect(await provider.acquire({ userId: 'u', threadId: 't' })).toBe(id);
    expect(fake.runs.at(-1)).toMatchObject({ command: 'true', options: { timeoutSeconds: 10 } });
  });

  for (const [label, result] of [
    ['exit 1', fakeExecution({ exitCode: 1 })],
    ['no exit code', fakeExecution({ exitCode: null })],
  ] as const) {
    it(`§8.8.170 an unhealthy warm sandbox (${label}) is deleted and replaced`, async () => {
      const { fake, provider, remoteOf } = setup();
      const id = await provider.acquire({ userId: 'u', threadId: 't' });
      const first = remoteOf(id);
      await provider.release(id);
      fake.respondTo(isHealthProbe, () => result);
      expect(await provider.acquire({ userId: 'u', threadId: 't' })).toBe(id);
      expect(remoteOf(id)).not.toBe(first);
      expect(fake.remote(first)).toMatchObject({ alive: false, kills: 1 });
      expect(provider.warmIds).toEqual([]);
    });
  }

  it('§8.8.178 a file-API 404 does not evict; a command-path 404 evicts the active sandbox, deleted once', async () => {
    const { fake, provider, remoteOf } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const first = remoteOf(id);
    await rejectionOf(provider.get(id)!.readFile('/mnt/user-data/workspace/missing.txt'));
    expect(remoteOf(id)).toBe(first);
    fake.failNext('run', fakeApiError(404, 'sandbox not found'));
    await rejectionOf(provider.get(id)!.executeCommand('echo hi'));
    expect(provider.get(id)).toBeUndefined();
    await settle();
    expect(fake.remote(first)).toMatchObject({ kills: 1, closes: 1 });
    expect(await provider.acquire({ userId: 'u', threadId: 't' })).toBe(id);
    expect(remoteOf(id)).not.toBe(first);
    await provider.shutdown();
    expect(fake.remote(first).kills).toBe(1);
  });

  it('§8.8.178 a terminal renewal error evicts before the command runs', async () => {
    const { fake, provider } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const runsBefore = fake.gate.count('run');
    fake.failNext('renew', fakeConnectionRefused());
    await rejectionOf(provider.get(id)!.executeCommand('echo hi'));
    expect(fake.gate.count('run')).toBe(runsBefore);
    expect(provider.get(id)).toBeUndefined();
  });

  it('§1.5 flags: no shared thread-data mounts, uploads need permission adjustment, no skill isolation', () => {
    const { provider } = setup();
    expect(provider.usesThreadDataMounts).toBe(false);
    expect(provider.needsUploadPermissionAdjustment).toBe(true);
    expect(provider.supportsAgentSkillIsolation).toBe(false);
    expect(() =>
      provider.admit({ userId: 'u', threadId: 't', skillPolicy: { allowedSkills: [] } }),
    ).toThrow('cannot enforce per-Agent skill filesystem isolation');
  });

  it('anonymous acquires get a random id, are not reclaimable, and are deleted on release', async () => {
    const { fake, provider, remoteOf } = setup();
    const a = await provider.acquire();
    const b = await provider.acquire();
    expect(a).toMatch(/^[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
    expect(fake.creates[0]!.options.metadata).toEqual({ deer_flow_provider: 'opensandbox' });
    const remote = remoteOf(a);
    await provider.release(a);
    expect(fake.remote(remote)).toMatchObject({ alive: false, kills: 1 });
    expect(provider.warmIds).toEqual([]);
  });
});

function fakeConnectionRefused(): Error {
  const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  return new TypeError('fetch failed', { cause });
}

describe('OpenSandboxProvider shutdown', () => {
  it('§8.8.171 shutdown() deletes every remote exactly once, stops the reaper, and is idempotent', async () => {
    const { fake, provider, clock } = setup();
    const a = await provider.acquire({ userId: 'u', threadId: 'a' });
    await provider.acquire({ userId: 'u', threadId: 'b' });
    await provider.release(a);
    expect(provider.idleCheckerRunning).toBe(true);
    await Promise.all([provider.shutdown(), provider.shutdown()]);
    await provider.shutdown();
    expect([...fake.remotes.values()].map((r) => [r.kills, r.closes, r.alive])).toEqual([
      [1, 1, false],
      [1, 1, false],
    ]);
    expect(provider.idleCheckerRunning).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    const err = await rejectionOf(provider.acquire({ userId: 'u', threadId: 'a' }));
    expect(err).toBeInstanceOf(ProviderClosedError);
    expect((err as Error).message).toBe('OpenSandboxProvider has been shut down');
    await provider.release(a);
  });
});

describe('OpenSandboxProvider races (deterministic interleavings)', () => {
  it('shutdown during a create waits for it, deletes the new remote and fails that acquire', async () => {
    const { fake, provider } = setup();
    fake.gate.pause('create');
    const acquire = track(provider.acquire({ userId: 'u', threadId: 't' }));
    const held = await fake.gate.nextCall('create');
    const shutdown = track(provider.shutdown());
    await settle();
    expect(shutdown.settled).toBe(false);
    await held.release();
    await shutdown.promise;
    const err = await rejectionOf(acquire.promise);
    expect(err).toBeInstanceOf(ProviderClosedError);
    expect((err as Error).message).toBe(PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE);
    expect(fake.remote('fake-1')).toMatchObject({ alive: false, kills: 1 });
  });

  it('an acquire waiting for the same thread when shutdown starts fails closed without touching the SDK', async () => {
    const { fake, provider } = setup();
    fake.gate.pause('create');
    const first = provider.acquire({ userId: 'u', threadId: 't' });
    const held = await fake.gate.nextCall('create');
    const second = provider.acquire({ userId: 'u', threadId: 't' });
    await settle();
    const shutdown = provider.shutdown();
    expect(await rejectionOf(second)).toBeInstanceOf(ProviderClosedError);
    await held.release();
    await rejectionOf(first);
    await shutdown;
    expect(fake.creates).toHaveLength(1);
  });

  it('a late terminal failure of an evicted sandbox never evicts its replacement', async () => {
    const { fake, provider, remoteOf } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const old = provider.get(id)!;
    fake.gate.pause('run', { times: 1 });
    const command = old.executeCommand('echo late');
    const heldRun = await fake.gate.nextCall('run');
    fake.vanish(old.remoteId);
    // The reuse renewal finds the remote gone: evict and rebuild within this acquire.
    expect(await provider.acquire({ userId: 'u', threadId: 't' })).toBe(id);
    const replacement = provider.get(id)!;
    expect(replacement).not.toBe(old);
    await heldRun.release();
    await rejectionOf(command);
    expect(provider.get(id)).toBe(replacement);
    expect(replacement.closed).toBe(false);
    await settle();
    expect(fake.remote(old.remoteId).kills).toBe(1);
    expect(remoteOf(id)).toBe(replacement.remoteId);
  });

  it('the idle checker cannot delete a warm sandbox while its reclaim health check runs', async () => {
    const { fake, provider, clock } = setup({ idleTimeout: 20 });
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    await provider.release(id);
    fake.gate.pause('run', { times: 1 });
    const acquire = provider.acquire({ userId: 'u', threadId: 't' });
    const health = await fake.gate.nextCall('run');
    expect(health.args[1]).toBe('true');
    // Parked longer than idle_timeout, but out of the pool while it is being checked.
    await clock.advance(30_000);
    await provider.runIdleCheck();
    expect(fake.gate.count('kill')).toBe(0);
    await health.release();
    expect(await acquire).toBe(id);
    expect(provider.get(id)?.closed).toBe(false);
  });

  it('a reclaim whose health check was still running when shutdown began deletes the sandbox and fails', async () => {
    const { fake, provider } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const remoteId = provider.get(id)!.remoteId;
    await provider.release(id);
    fake.gate.pause('run', { times: 1 });
    const acquire = track(provider.acquire({ userId: 'u', threadId: 't' }));
    const health = await fake.gate.nextCall('run');
    const shutdown = track(provider.shutdown());
    await settle();
    await health.release();
    const err = await rejectionOf(acquire.promise);
    expect(err).toBeInstanceOf(ProviderClosedError);
    expect((err as Error).message).toBe(PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE);
    await shutdown.promise;
    expect(fake.remote(remoteId)).toMatchObject({ alive: false, kills: 1 });
  });

  it('a release refused parking (the idle checker is deleting the old sandbox of that id) deletes the new one', async () => {
    const { fake, provider, clock } = setup({ idleTimeout: 20 });
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    await provider.release(id);
    fake.gate.pause('kill', { times: 1 });
    await clock.advance(30_000);
    const reaping = provider.runIdleCheck();
    const oldKill = await fake.gate.nextCall('kill');
    try {
      // The old sandbox is reserved for its deletion: the acquire cannot reclaim it, so it creates.
      expect(await provider.acquire({ userId: 'u', threadId: 't' })).toBe(id);
      const replacement = provider.get(id)!.remoteId;
      await provider.release(id);
      expect(provider.activeIds).toEqual([]);
      expect(fake.remote(replacement)).toMatchObject({ alive: false, kills: 1 });
    } finally {
      await oldKill.release();
    }
    await reaping;
    expect(provider.warmIds).toEqual([]);
    expect(fake.aliveIds).toEqual([]);
  });

  it('a reuse whose renewal was still running when shutdown began fails instead of handing out a sandbox being deleted', async () => {
    const { fake, provider } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const remoteId = provider.get(id)!.remoteId;
    fake.gate.pause('renew', { times: 1 });
    const reuse = track(provider.acquire({ userId: 'u', threadId: 't' }));
    const renew = await fake.gate.nextCall('renew');
    const shutdown = track(provider.shutdown());
    await settle();
    await renew.release();
    const err = await rejectionOf(reuse.promise);
    expect(err).toBeInstanceOf(ProviderClosedError);
    expect((err as Error).message).toBe(PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE);
    await shutdown.promise;
    expect(fake.remote(remoteId)).toMatchObject({ alive: false, kills: 1 });
  });

  it('no acquire hands a sandbox out once shutdown has begun, wherever the shutdown lands', async () => {
    // The shutdown is started a few microtasks after a reuse, at every depth in turn: before the
    // lock, between its grant and the section, during the renewal, after it.
    for (let depth = 0; depth < 16; depth += 1) {
      const { fake, provider } = setup();
      const id = await provider.acquire({ userId: 'u', threadId: 't' });
      let shutdownBegan = false;
      const handedOutAfterShutdown: number[] = [];
      provider.onEvent((event) => {
        if (event.type === 'acquire' && shutdownBegan) handedOutAfterShutdown.push(depth);
      });
      const again = provider.acquire({ userId: 'u', threadId: 't' }).catch((e: unknown) => e);
      let chain = Promise.resolve();
      for (let i = 0; i < depth; i += 1) chain = chain.then(() => undefined);
      const shuttingDown = chain.then(() => {
        shutdownBegan = true;
        return provider.shutdown();
      });
      const outcome = await again;
      await shuttingDown;
      expect(handedOutAfterShutdown).toEqual([]);
      if (outcome !== id) expect(outcome).toBeInstanceOf(ProviderClosedError);
      expect(fake.aliveIds).toEqual([]);
    }
  });

  it('a thread-less acquire still loading the SDK when shutdown begins creates nothing', async () => {
    const fake = new FakeOpenSandbox();
    fakes.push(fake);
    const sdk = new Deferred<typeof fake.sdk>();
    const provider = new OpenSandboxProvider({
      config: { opensandbox: SECURE },
      sdk: () => sdk.promise,
      clock: new ManualClock(1_000_000),
      logger: capturingLogger().logger,
      env: {},
    });
    providers.push(provider);
    const acquire = track(provider.acquire());
    await settle();
    const shutdown = track(provider.shutdown());
    await settle();
    sdk.resolve(fake.sdk);
    expect(await rejectionOf(acquire.promise)).toBeInstanceOf(ProviderClosedError);
    await shutdown.promise;
    expect(fake.creates).toEqual([]);
  });

  it('a renewal that finds the remote gone after shutdown began fails the acquire and creates nothing', async () => {
    const { fake, provider } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    fake.gate.pause('renew', { times: 1 });
    const reuse = track(provider.acquire({ userId: 'u', threadId: 't' }));
    const renew = await fake.gate.nextCall('renew');
    const shutdown = track(provider.shutdown());
    await settle();
    renew.fail(fakeApiError(404, 'sandbox not found'));
    await rejectionOf(reuse.promise);
    await shutdown.promise;
    expect(fake.creates).toHaveLength(1);
    expect(provider.get(id)).toBeUndefined();
    expect(fake.aliveIds).toEqual([]);
  });

  it('shutdown waits for the deletion of a sandbox evicted just before', async () => {
    const { fake, provider, remoteOf } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const evicted = remoteOf(id);
    fake.gate.pause('kill', { times: 1 });
    fake.failNext('run', fakeApiError(404, 'sandbox not found'));
    await rejectionOf(provider.get(id)!.executeCommand('echo hi'));
    const deleting = await fake.gate.nextCall('kill');
    const shutdown = track(provider.shutdown());
    await settle();
    expect(shutdown.settled).toBe(false);
    await deleting.release();
    await shutdown.promise;
    expect(fake.remote(evicted)).toMatchObject({ alive: false, kills: 1 });
  });

  it('a release while shutdown is under way deletes the sandbox and does not fail', async () => {
    const { fake, provider } = setup();
    await provider.release(await provider.acquire({ userId: 'u', threadId: 'parked' }));
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const remoteId = provider.get(id)!.remoteId;
    fake.gate.pause('kill', { times: 1 });
    const shutdown = track(provider.shutdown());
    // Shutdown is deleting the warm sandbox; the active one is released meanwhile.
    const deleting = await fake.gate.nextCall('kill');
    try {
      await provider.release(id);
      expect(fake.remote(remoteId)).toMatchObject({ alive: false, kills: 1 });
    } finally {
      await deleting.release();
    }
    await shutdown.promise;
    expect(fake.aliveIds).toEqual([]);
  });

  it('a release whose locked section starts after shutdown began deletes the sandbox instead of parking it', async () => {
    const { fake, provider } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const remoteId = provider.get(id)!.remoteId;
    // Same tick: the release has passed its unlocked shutdown check and waits for the per-id
    // lock when the shutdown starts; its section runs with the provider already closed.
    const releasing = provider.release(id);
    const shutdown = provider.shutdown();
    await Promise.all([releasing, shutdown]);
    expect(provider.warmIds).toEqual([]);
    expect(fake.remote(remoteId)).toMatchObject({ alive: false, kills: 1 });
  });

  it('a health check that never answers is abandoned after 10 s + 30 s and the sandbox replaced', async () => {
    const { fake, provider, clock, remoteOf } = setup({ idleTimeout: 0 });
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    const first = remoteOf(id);
    await provider.release(id);
    fake.gate.pause('run', { times: 1 });
    const acquire = track(provider.acquire({ userId: 'u', threadId: 't' }));
    await fake.gate.nextCall('run');
    await clock.advance(39_999);
    await settle();
    expect(acquire.settled).toBe(false);
    await clock.advance(1);
    expect(await acquire.promise).toBe(id);
    expect(remoteOf(id)).not.toBe(first);
    expect(fake.remote(first)).toMatchObject({ alive: false, kills: 1 });
  });

  it('release waits for an acquire of the same thread that is still renewing', async () => {
    const { fake, provider } = setup();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    fake.gate.pause('renew', { times: 1 });
    const acquire = provider.acquire({ userId: 'u', threadId: 't' });
    const renew = await fake.gate.nextCall('renew');
    const release = track(provider.release(id));
    await settle();
    expect(release.settled).toBe(false);
    expect(provider.activeIds).toEqual([id]);
    await renew.release();
    expect(await acquire).toBe(id);
    await release.promise;
    expect(provider.activeIds).toEqual([]);
    expect(provider.warmIds).toEqual([id]);
  });

  it('reset while an acquire waits refuses the waiter and leaves no remote behind (nothing finds them again)', async () => {
    const { fake, provider } = setup();
    fake.gate.pause('create');
    const first = track(provider.acquire({ userId: 'u', threadId: 't' }));
    const heldFirst = await fake.gate.nextCall('create');
    const second = track(provider.acquire({ userId: 'u', threadId: 't' }));
    await settle();
    const resetting = provider.reset();
    await settle();
    fake.gate.resume('create');
    await heldFirst.release();
    await resetting;
    await Promise.allSettled([first.promise, second.promise]);
    expect(first.reason).toBeInstanceOf(ProviderClosedError);
    expect(second.reason).toBeInstanceOf(ProviderClosedError);
    expect(fake.aliveIds).toEqual([]);
  });
});

describe('§8.5 warm-pool deletions on OpenSandbox', () => {
  const deletedFor = (lines: LogLine[], reason: string) =>
    lines.some((l) => l.msg.startsWith('Deleting warm') && l.fields?.reason === reason);

  it('§8.5.109 making room logs the deletion with reason replica_enforcement', async () => {
    const { provider, lines } = setup({ replicas: 1 });
    await provider.release(await provider.acquire({ userId: 'u', threadId: 'a' }));
    await provider.acquire({ userId: 'u', threadId: 'b' });
    expect(deletedFor(lines, 'replica_enforcement')).toBe(true);
  });

  it('§8.5.110 expiry logs the deletion with reason idle_timeout', async () => {
    const { provider, clock, lines } = setup({
      idleTimeout: 100,
      warmPool: { idleCheckIntervalSeconds: 10_000 },
    });
    await provider.release(await provider.acquire({ userId: 'u', threadId: 'a' }));
    await clock.advance(101_000);
    await provider.runIdleCheck();
    expect(deletedFor(lines, 'idle_timeout')).toBe(true);
  });
});
