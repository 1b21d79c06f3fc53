import {
  ConfigError,
  MissingDependencyError,
  ProviderClosedError,
  SandboxIdentityCollisionError,
  SandboxRuntimeError,
  isSbxError,
} from '@sbx/core';
import { disposedAfterEach, rejectionOf, settle, track } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { BoxliteProvider } from './boxlite-provider.js';
import type { FakeExecCall } from './testing/fake-boxlite-runtime.js';
import type { Harness } from './testing/harness.js';
import { boxliteConfig, harness as makeHarness } from './testing/harness.js';
import { VirtualizationUnavailableError } from './virtualization.js';

const harness = disposedAfterEach(makeHarness);

const isHealthCheck = (c: FakeExecCall) => c.args[1] === 'echo ok';
const healthChecks = (h: Harness) => h.runtime.execCalls.filter(isHealthCheck).length;

function moduleNotFound(name: string): Error {
  return Object.assign(new Error(`Cannot find package '${name}' imported from /app`), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
}

describe('§8.6 BoxLite provider', () => {
  it('§8.6.112 a missing SDK fails at acquire naming @boxlite-ai/boxlite; shutdown stays clean and idempotent', async () => {
    const imported: string[] = [];
    const provider = new BoxliteProvider({
      config: boxliteConfig(),
      platform: 'linux',
      fsAccess: async () => {},
      importer: async (name) => {
        imported.push(name);
        throw moduleNotFound(name);
      },
    });
    const err = await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }));
    expect(err).toBeInstanceOf(MissingDependencyError);
    expect((err as MissingDependencyError).packageName).toBe('@boxlite-ai/boxlite');
    expect((err as Error).message).toContain('npm install @boxlite-ai/boxlite');
    expect(imported).toEqual(['@boxlite-ai/boxlite']);
    await provider.shutdown();
    await provider.shutdown();
  });

  it('§8.6.112 a host without KVM fails with a typed error that says so, before loading the SDK', async () => {
    for (const [code, problem, text] of [
      ['ENOENT', 'kvm-absent', '/dev/kvm does not exist'],
      ['EACCES', 'kvm-inaccessible', '/dev/kvm is not accessible'],
    ] as const) {
      const imported: string[] = [];
      const probed: string[] = [];
      const provider = new BoxliteProvider({
        config: boxliteConfig(),
        platform: 'linux',
        fsAccess: async (p) => {
          probed.push(p);
          throw Object.assign(new Error(`${code}: ${p}`), { code });
        },
        importer: async (name) => {
          imported.push(name);
          return {};
        },
      });
      const err = await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }));
      expect(err).toBeInstanceOf(VirtualizationUnavailableError);
      expect((err as VirtualizationUnavailableError).problem).toBe(problem);
      expect(isSbxError(err) && err.code).toBe('SANDBOX_RUNTIME');
      expect((err as Error).message).toContain('KVM is not available on this host');
      expect((err as Error).message).toContain(text);
      expect(probed).toEqual(['/dev/kvm']);
      expect(imported).toEqual([]);
      await provider.shutdown();
    }
  });

  it('§8.6.112 an unsupported platform is refused up front', async () => {
    const provider = new BoxliteProvider({ config: boxliteConfig(), platform: 'win32' });
    const err = await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }));
    expect((err as VirtualizationUnavailableError).problem).toBe('unsupported-platform');
    await provider.shutdown();
  });

  it('§8.6.121 ids are 16 hex, deterministic, distinct per user and thread; 16 hex separates a known 8-hex collision', () => {
    const { provider } = harness();
    const id = provider.sandboxIdFor('u', 't');
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(provider.sandboxIdFor('u', 't')).toBe(id);
    expect(provider.sandboxIdFor('v', 't')).not.toBe(id);
    expect(provider.sandboxIdFor('u', 'x')).not.toBe(id);
    const a = provider.sandboxIdFor('user-9721', 'thread-9721');
    const b = provider.sandboxIdFor('user-94361', 'thread-94361');
    expect(a.slice(0, 8)).toBe(b.slice(0, 8));
    expect(a).not.toBe(b);
    expect(provider.sandboxIdFor(undefined, 't')).toBe(provider.sandboxIdFor('default', 't'));
  });

  it('§8.6.122 idle_timeout 0 is kept and starts no idle checker', () => {
    const { provider } = harness({ idle_timeout: 0 });
    expect(provider.settings.idleTimeoutSeconds).toBe(0);
    expect(provider.idleCheckerRunning).toBe(false);
  });

  it('§8.6.123 boxes are named sbx-boxlite-<id>; name_prefix reproduces the reference naming', async () => {
    const h = harness();
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(h.runtime.created.map((b) => b.name)).toEqual([`sbx-boxlite-${id}`]);
    const ref = harness({ boxlite: { name_prefix: 'deer-flow-boxlite-' } });
    const id2 = await ref.provider.acquire({ userId: 'u', threadId: 't' });
    expect(ref.runtime.created.map((b) => b.name)).toEqual([`deer-flow-boxlite-${id2}`]);
  });

  it('§8.6.123 creation passes image, memory and cpus from the configuration', async () => {
    const h = harness({ image: 'alpine:3.20', boxlite: { memory_mib: 1024, cpus: 2 } });
    await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(h.runtime.created[0]?.spec).toMatchObject({
      image: 'alpine:3.20',
      memoryMib: 1024,
      cpus: 2,
    });
  });

  it('§8.6.124 startup reconciliation adopts only prefixed boxes into the warm pool; shutdown stops them', async () => {
    const h = harness();
    const mine = await h.runtime.seed('sbx-boxlite-0123456789abcdef');
    const other = await h.runtime.seed('someone-else-0123456789abcdef');
    await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(h.provider.warmIds).toEqual(['0123456789abcdef']);
    await h.provider.shutdown();
    expect(mine.running).toBe(false);
    expect(other.running).toBe(true);
  });

  it('release ends the background processes of the turn and parks the box for the next one', async () => {
    const h = harness();
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    const sandbox = h.provider.get(id)!;
    const server = await sandbox.processes.start('sleep 300');
    await h.provider.release(id);
    expect(server.info().status).toBe('exited');
    expect(h.provider.warmIds).toEqual([id]);
    const again = h.provider.get(await h.provider.acquire({ userId: 'u', threadId: 't' }))!;
    const next = await again.processes.start('echo next');
    expect(await next.wait()).toMatchObject({ exitCode: 0 });
  });

  it('§8.6.126 within the skip window a recent release is reclaimed without a health check; by default the check runs once', async () => {
    const h = harness({ health_check_skip_seconds: 30 });
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    await h.provider.release(id);
    await h.clock.advance(10_000);
    await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(healthChecks(h)).toBe(0);
    await h.provider.release(id);
    await h.clock.advance(31_000);
    await h.provider.acquire({ userId: 'u', threadId: 't' });
    expect(healthChecks(h)).toBe(1);

    const d = harness();
    const id2 = await d.provider.acquire({ userId: 'u', threadId: 't' });
    await d.provider.release(id2);
    await d.provider.acquire({ userId: 'u', threadId: 't' });
    expect(healthChecks(d)).toBe(1);
  });

  it('§8.6.127 a health check that hangs fails on time and cannot pin the acquire lock', async () => {
    const h = harness();
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    const first = h.runtime.latest(h.provider.boxName(id));
    await h.provider.release(id);
    h.runtime.gate.pause('exec', { times: 1 });
    const acquiring = track(h.provider.acquire({ userId: 'u', threadId: 't' }));
    const queued = track(h.provider.acquire({ userId: 'u', threadId: 't' }));
    const hung = await h.runtime.gate.nextCall('exec');
    expect(hung.args[0]).toMatchObject({ args: ['-c', 'echo ok'], options: { timeoutSecs: 5 } });
    await settle();
    expect(acquiring.settled).toBe(false);
    await h.clock.advance(4_999);
    await settle();
    expect(acquiring.settled).toBe(false);
    await h.clock.advance(1);
    expect(await acquiring.promise).toBe(id);
    expect(await queued.promise).toBe(id);
    expect(first?.running).toBe(false);
    expect(h.provider.get(id)?.box).toBe(h.runtime.latest(h.provider.boxName(id)));
    expect(h.provider.get(id)?.box).not.toBe(first);
    await hung.release();
  });

  it('§8.6.129 adopted warm boxes always health-check, even within the skip window', async () => {
    const h = harness({ health_check_skip_seconds: 3600 });
    const id = h.provider.sandboxIdFor('u', 't');
    const adopted = await h.runtime.seed(h.provider.boxName(id));
    expect(await h.provider.acquire({ userId: 'u', threadId: 't' })).toBe(id);
    expect(healthChecks(h)).toBe(1);
    expect(h.provider.get(id)?.box).toBe(adopted);
  });

  it('§8.6.132 reset() hands the boxes over: the runtime stays open, no box is stopped, and a replacement health-checks the adopted box before reuse even within the skip window', async () => {
    const h = harness({ health_check_skip_seconds: 3600 });
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    const box = h.runtime.latest(h.provider.boxName(id));
    await h.provider.reset();
    expect(h.runtime.closed).toBe(false);
    expect(box?.running).toBe(true);
    expect(h.provider.activeIds).toEqual([]);
    await expect(h.provider.acquire({ userId: 'u', threadId: 't' })).rejects.toBeInstanceOf(
      ProviderClosedError,
    );
    const next = new BoxliteProvider({
      config: boxliteConfig({ health_check_skip_seconds: 3600 }),
      runtime: h.runtime,
      clock: h.clock,
      logger: h.logger,
    });
    try {
      expect(await next.acquire({ userId: 'u', threadId: 't' })).toBe(id);
      expect(healthChecks(h)).toBe(1);
      expect(next.get(id)?.box).toBe(box);
    } finally {
      await next.shutdown();
    }
  });

  it('§8.6.135 shutdown stops the active boxes and closes the runtime as well', async () => {
    const h = harness();
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    await h.provider.shutdown();
    expect(h.runtime.latest(h.provider.boxName(id))?.running).toBe(false);
    expect(h.runtime.closed).toBe(true);
  });

  describe('§8.6.136 forced id collisions', () => {
    const fixed = () => 'ffffffffffffffff';

    it('§8.6.136 never hands one tenant’s box to another; the box is untouched and its tenant still reclaims it', async () => {
      const h = harness({}, { deriveSandboxId: fixed });
      const id = await h.provider.acquire({ userId: 'alice', threadId: 't' });
      const box = h.runtime.latest(h.provider.boxName(id));
      const execs = h.runtime.execCalls.length;
      const active = await rejectionOf(h.provider.acquire({ userId: 'bob', threadId: 't' }));
      expect(active).toBeInstanceOf(SandboxIdentityCollisionError);
      expect((active as Error).message).toContain('sandbox ID collision');
      await h.provider.release(id);
      const warm = await rejectionOf(h.provider.acquire({ userId: 'bob', threadId: 't' }));
      expect(warm).toBeInstanceOf(SandboxIdentityCollisionError);
      expect(h.runtime.execCalls.length).toBe(execs);
      expect(box?.running).toBe(true);
      expect(h.provider.warmIds).toEqual([id]);
      expect(await h.provider.acquire({ userId: 'alice', threadId: 't' })).toBe(id);
      expect(h.provider.get(id)?.box).toBe(box);
    });

    it('§8.6.136 a creation still in flight when reset() retires the provider stops its box and fails with ProviderClosedError', async () => {
      const h = harness({}, {}, { uniqueNames: false });
      h.runtime.gate.pause('create');
      const late = h.provider.acquire({ userId: 'u', threadId: 't' });
      const held = await h.runtime.gate.nextCall('create');
      await h.provider.reset();
      await held.release();
      expect(await rejectionOf(late)).toBeInstanceOf(ProviderClosedError);
      // Nobody is using a box created for a retired instance: it is stopped, not left behind.
      expect(h.runtime.created[0]?.running).toBe(false);
      expect(h.provider.activeIds).toEqual([]);
    });

    it('§8.6.136 a failed health check stops only the box it checked, never another tenant’s', async () => {
      const h = harness({}, { deriveSandboxId: fixed });
      const id = fixed();
      const adopted = await h.runtime.seed(h.provider.boxName(id));
      h.runtime.gate.pause('exec', { times: 1 });
      const alice = h.provider.acquire({ userId: 'alice', threadId: 't' });
      const check = await h.runtime.gate.nextCall('exec');
      // While checked, the box is out of the pool: nothing can reap or hand it out meanwhile.
      expect(h.provider.warmIds).toEqual([]);
      const bob = track(h.provider.acquire({ userId: 'bob', threadId: 't' }));
      check.fail(new Error('guest agent not responding'));
      expect(await alice).toBe(id);
      expect(adopted.running).toBe(false);
      const alicesBox = h.provider.get(id)?.box;
      expect(await rejectionOf(bob.promise)).toBeInstanceOf(SandboxIdentityCollisionError);
      expect(h.provider.get(id)?.box).toBe(alicesBox);
      expect(h.runtime.latest(h.provider.boxName(id))?.running).toBe(true);
    });
  });

  describe('races with teardown', () => {
    it('a box the idle checker is stopping is never handed out; the new box waits for the stop', async () => {
      const h = harness({ idle_timeout: 60 });
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      const old = h.runtime.latest(h.provider.boxName(id));
      await h.provider.release(id);
      h.runtime.gate.pause('stop', { times: 1 });
      const reaping = h.clock.advance(120_000);
      const stop = await h.runtime.gate.nextCall('stop');
      const acquiring = track(h.provider.acquire({ userId: 'u', threadId: 't' }));
      await settle();
      expect(acquiring.settled).toBe(false);
      expect(h.runtime.gate.count('create')).toBe(1);
      await stop.release();
      await reaping;
      expect(await acquiring.promise).toBe(id);
      expect(h.provider.get(id)?.box).not.toBe(old);
      expect(old?.running).toBe(false);
      expect(healthChecks(h)).toBe(0);
      // Refused as gone, not taken and mistaken for a box that failed its health check.
      expect(h.logger.text('warn')).not.toContain('failed its health check');
    });

    it('no acquire hands a box out once shutdown has begun, wherever the shutdown lands', async () => {
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
        expect(h.runtime.latest(h.provider.boxName(id))?.running).toBe(false);
      }
    });

    it('a warm box whose stop fails stays in the pool, still running, and a later pass stops it', async () => {
      const h = harness({ idle_timeout: 60 });
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      await h.provider.release(id);
      const box = h.runtime.latest(h.provider.boxName(id))!;
      box.stopFailures.push(new Error('engine busy'));
      await h.clock.advance(61_000);
      await h.provider.runIdleCheck();
      expect(box.stopCalls).toBe(1);
      expect(box.running).toBe(true);
      expect(h.provider.warmIds).toEqual([id]);
      expect(h.logger.text('error')).toContain('Failed to stop BoxLite box');
      await h.provider.runIdleCheck();
      expect(box.running).toBe(false);
      expect(h.provider.warmIds).toEqual([]);
    });

    it('a reclaim whose health check was still running when shutdown began stops the box and fails', async () => {
      const h = harness();
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      const box = h.runtime.latest(h.provider.boxName(id));
      await h.provider.release(id);
      h.runtime.gate.pause('exec', { times: 1 });
      const acquiring = track(h.provider.acquire({ userId: 'u', threadId: 't' }));
      const check = await h.runtime.gate.nextCall('exec');
      await h.provider.shutdown();
      await check.release();
      expect(await rejectionOf(acquiring.promise)).toBeInstanceOf(ProviderClosedError);
      expect(h.provider.activeIds).toEqual([]);
      expect(box?.running).toBe(false);
    });

    it('a background process whose launch is still in flight at release is ended with the turn', async () => {
      const h = harness();
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      const box = h.runtime.latest(h.provider.boxName(id))!;
      h.runtime.gate.pause('start', { times: 1 });
      const starting = h.provider.get(id)!.processes.start('sleep 300');
      const launch = await h.runtime.gate.nextCall('start');
      const releasing = h.provider.release(id);
      await settle();
      await launch.release();
      const server = await starting;
      await releasing;
      expect(server.info().status).toBe('exited');
      expect(box.signals).toEqual(['SIGKILL']);
      expect(h.provider.warmIds).toEqual([id]);
    });

    it('an acquire abandoned while queued leaves no trace and creates nothing', async () => {
      const h = harness();
      h.runtime.gate.pause('create', { times: 1 });
      const first = h.provider.acquire({ userId: 'u', threadId: 't' });
      const create = await h.runtime.gate.nextCall('create');
      const controller = new AbortController();
      const second = h.provider.acquire({ userId: 'u', threadId: 't', signal: controller.signal });
      controller.abort();
      expect(isSbxError(await rejectionOf(second)) && 'ABORTED').toBe('ABORTED');
      await create.release();
      await first;
      expect(h.runtime.created).toHaveLength(1);
    });

    it('a thread-less acquire gets an anon- id of its own; its release stops the box (nobody can reclaim it)', async () => {
      const h = harness();
      const id = await h.provider.acquire();
      expect(id).toMatch(/^anon-[0-9a-f]{12}$/);
      await h.provider.release(id);
      expect(h.provider.warmIds).toEqual([]);
      expect(h.runtime.created[0]?.running).toBe(false);
    });

    it('a release while shutdown is under way stops the box and does not fail', async () => {
      const h = harness();
      await h.provider.release(await h.provider.acquire({ userId: 'u', threadId: 'parked' }));
      const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
      h.runtime.gate.pause('stop', { times: 1 });
      const shuttingDown = h.provider.shutdown();
      // Shutdown is stopping the warm box; the active one is released meanwhile.
      const stopping = await h.runtime.gate.nextCall('stop');
      await h.provider.release(id);
      expect(h.runtime.latest(h.provider.boxName(id))?.running).toBe(false);
      await stopping.release();
      await shuttingDown;
      expect(h.runtime.created.every((b) => !b.running)).toBe(true);
    });

    it('a box that cannot be prepared is stopped and the acquire fails', async () => {
      const h = harness();
      h.runtime.gate.pause('start', { times: 1 });
      const acquiring = h.provider.acquire({ userId: 'u', threadId: 't' });
      (await h.runtime.gate.nextCall('start')).fail(new Error('exec failed: no shell'));
      const err = await rejectionOf(acquiring);
      expect(err).toBeInstanceOf(SandboxRuntimeError);
      expect(h.runtime.created[0]?.running).toBe(false);
      expect(h.provider.activeIds).toEqual([]);
    });
  });

  it('rejects an explicit skill policy before creating anything', async () => {
    const h = harness();
    expect(() =>
      h.provider.admit({ userId: 'u', threadId: 't', skillPolicy: { allowedSkills: [] } }),
    ).toThrow(/cannot enforce per-Agent skill filesystem isolation/);
    await rejectionOf(
      h.provider.acquire({ userId: 'u', threadId: 't', skillPolicy: { allowedSkills: [] } }),
    );
    expect(h.runtime.created).toHaveLength(0);
  });

  it('reports the provider flags of a VM without shared thread mounts', () => {
    const { provider } = harness();
    expect(provider.usesThreadDataMounts).toBe(false);
    expect(provider.needsUploadPermissionAdjustment).toBe(true);
    expect(provider.supportsAgentSkillIsolation).toBe(false);
  });

  it('rejects an invalid configuration with every problem listed', () => {
    let err: unknown;
    try {
      new BoxliteProvider({
        config: boxliteConfig({
          boxlite: { cpus: 0, memroy_mib: 5, name_prefix: 'bad prefix' },
        }),
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues.map((i) => i.path).sort()).toEqual([
      'sandbox.boxlite.cpus',
      'sandbox.boxlite.memroy_mib',
      'sandbox.boxlite.name_prefix',
    ]);
  });

  it('a release whose locked section starts after shutdown began stops the box instead of parking it behind the teardown', async () => {
    const h = harness();
    const id = await h.provider.acquire({ userId: 'u', threadId: 't' });
    const box = h.runtime.latest(h.provider.boxName(id));
    // Same tick: the release has passed its unlocked shutdown check and waits for the per-id
    // lock; the shutdown starts before its section runs. Shutdown closes the lock table in the
    // same synchronous step that marks the provider closed, so the queued section is refused and
    // the box is stopped as an active one; the `closed` check inside the section is a second line
    // that no interleaving reaches today.
    const releasing = h.provider.release(id).catch(() => undefined);
    const shuttingDown = h.provider.shutdown();
    await Promise.all([releasing, shuttingDown]);
    expect(h.provider.warmIds).toEqual([]);
    expect(h.provider.activeIds).toEqual([]);
    expect(box?.running).toBe(false);
  });
});
