import { getSandboxLeaseManager, isSbxError } from '@sbx/core';
import { describeLifecycleContract, rejectionOf } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';
import type { SandboxBackend } from './sandbox-backend.js';
import { makeHarness } from './testing/provider-harness.js';

// Pause and resume on the AIO provider over the in-memory container backend, whose stand-in keeps
// the engine's rules (a paused container answers nothing; pausing one already paused and
// unpausing one not paused are both fine; a gone one is an error). Real Docker: aio-pause.int.test.ts.

const { harness } = harnessContext();

function codeOf(error: unknown): string | undefined {
  return isSbxError(error) ? error.code : undefined;
}

// The stand-in's files live in memory, not in bind-mounted host directories, so it does not claim
// thread data mounts: snapshot (which reads those directories) takes the contract's refused branch
// here and is run for real in aio-pause.int.test.ts (the contract on real Docker).
describeLifecycleContract('AioSandboxProvider (in-memory backend)', async () => {
  const h = await makeHarness({ config: { thread_data_mounts: false } });
  return { provider: h.provider, cleanup: () => h.cleanup() };
});

describe('AIO pause and resume', () => {
  it('declares pause on a backend that can pause, and pauses the container itself', async () => {
    const h = await harness();
    expect(h.provider.lifecycleSupport.pause).toBe(true);
    const id = await h.provider.acquire(T('t'));
    await h.provider.pause(id);
    expect(h.backend.isPaused(id)).toBe(true);
    // Not handed out while paused: its calls would hang.
    expect(h.provider.get(id)).toBeUndefined();
    // Still this instance's, still owned: the lease is kept.
    expect(h.lease(id)).toBe(`own:${h.ownerId}`);
    await h.provider.resume(id);
    expect(h.backend.isPaused(id)).toBe(false);
    expect(h.provider.get(id)).toBeDefined();
  });

  it('a backend without pause (a provisioner) refuses pause and resume, typed', async () => {
    const inner = await harness();
    const noPause = new Proxy(inner.backend, {
      get: (target, prop) => {
        if (prop === 'pause' || prop === 'unpause') return undefined;
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    }) as SandboxBackend;
    const h = await harness({
      backend: inner.backend,
      init: { backend: noPause, createClient: (info) => inner.backend.clientFor(info) },
    });
    expect(h.provider.lifecycleSupport.pause).toBe(false);
    const id = await h.provider.acquire(T('np'));
    expect(codeOf(await rejectionOf(h.provider.pause(id)))).toBe('CAPABILITY_NOT_SUPPORTED');
    expect(codeOf(await rejectionOf(h.provider.resume(id)))).toBe('CAPABILITY_NOT_SUPPORTED');
    expect(h.provider.get(id)).toBeDefined();
  });

  it('pausing a sandbox this instance does not hold is SANDBOX_NOT_FOUND', async () => {
    const h = await harness();
    expect(codeOf(await rejectionOf(h.provider.pause('0123456789abcdef')))).toBe(
      'SANDBOX_NOT_FOUND',
    );
    expect(codeOf(await rejectionOf(h.provider.resume('0123456789abcdef')))).toBe(
      'SANDBOX_NOT_FOUND',
    );
  });

  it('a warm (released) sandbox is paused too, and its reclaim resumes it', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('w'));
    await h.provider.get(id)!.writeFile('/mnt/user-data/workspace/a.txt', 'a\n');
    await h.provider.release(id);
    await h.provider.pause(id);
    expect(h.backend.isPaused(id)).toBe(true);
    expect(await h.provider.acquire(T('w'))).toBe(id);
    expect(h.backend.isPaused(id)).toBe(false);
    expect(await h.provider.get(id)!.readFile('/mnt/user-data/workspace/a.txt')).toBe('a\n');
  });
});

describe('AIO pause races', () => {
  it('pause while a turn holds an execution lease is refused with SANDBOX_BUSY; nothing is paused', async () => {
    const h = await harness();
    const manager = getSandboxLeaseManager(h.provider);
    const id = await manager.acquire('turn-1', T('busy'));
    const refused = await rejectionOf(h.provider.pause(id));
    expect(codeOf(refused)).toBe('SANDBOX_BUSY');
    expect(h.backend.isPaused(id)).toBe(false);
    expect(h.backend.count('pause')).toBe(0);
    expect(await h.provider.get(id)!.exec('echo still running')).toMatchObject({
      exitCode: 0,
    });
    await manager.release('turn-1');
    // Once the turn has left, the same pause goes through.
    await h.provider.pause(id);
    expect(h.backend.isPaused(id)).toBe(true);
  });

  it('a turn cannot bind the sandbox while its pause is in flight', async () => {
    const h = await harness();
    const manager = getSandboxLeaseManager(h.provider);
    const id = await h.provider.acquire(T('bind'));
    await h.provider.release(id);
    h.backendGate.pause('pause', { times: 1 });
    const pausing = h.provider.pause(id);
    const held = await h.backendGate.nextCall('pause');
    // The pause holds the lease manager's reservation: a turn gets a typed refusal, never a
    // sandbox that is being frozen under it.
    expect(codeOf(await rejectionOf(manager.retain('turn-2', id, T('bind'))))).toBe('LEASE_STATE');
    await held.release();
    await pausing;
    expect(h.backend.isPaused(id)).toBe(true);
  });

  it('an acquire of the thread waits for a pause in flight, then resumes the sandbox', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('order'));
    h.backendGate.pause('pause', { times: 1 });
    const pausing = h.provider.pause(id);
    const held = await h.backendGate.nextCall('pause');
    let acquired = false;
    const acquiring = h.provider.acquire(T('order')).then((got) => {
      acquired = true;
      return got;
    });
    // The acquire is behind the pause on the thread's lock: it has not run a single step.
    await Promise.resolve();
    expect(acquired).toBe(false);
    expect(h.backend.count('checkHealth', id)).toBe(0);
    await held.release();
    await pausing;
    expect(await acquiring).toBe(id);
    expect(h.backend.isPaused(id)).toBe(false);
    expect(h.provider.get(id)).toBeDefined();
  });

  it('resume racing release: the release parks it while the unpause is held; it ends running and reclaimable', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('rr'));
    await h.provider.pause(id);
    h.backendGate.pause('unpause', { times: 1 });
    const resuming = h.provider.resume(id);
    const held = await h.backendGate.nextCall('unpause');
    await h.provider.release(id);
    expect(h.provider.stateSnapshot().warm).toEqual([id]);
    // Still marked paused: the unpause has not happened.
    expect(h.backend.isPaused(id)).toBe(true);
    await held.release();
    await resuming;
    expect(h.backend.isPaused(id)).toBe(false);
    expect(await h.provider.acquire(T('rr'))).toBe(id);
    expect(await h.provider.get(id)!.exec('echo back')).toMatchObject({ exitCode: 0 });
    // The reclaim found nothing to unpause: the mark went with the completed unpause.
    expect(h.backend.count('unpause', id)).toBe(1);
  });

  it('release first, then the resume: the warm sandbox is resumed in place', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('rr2'));
    await h.provider.pause(id);
    await h.provider.release(id);
    await h.provider.resume(id);
    expect(h.backend.isPaused(id)).toBe(false);
    expect(await h.provider.acquire(T('rr2'))).toBe(id);
    expect(h.provider.get(id)).toBeDefined();
  });

  it('two instances resuming at once: both unpauses are held, then let go in turn; both succeed', async () => {
    const a = await harness({ crossProcess: true });
    const b = await a.peer();
    const id = await a.provider.acquire(T('two'));
    await a.provider.get(id)!.writeFile('/mnt/user-data/workspace/p.txt', 'paused on a\n');
    await a.provider.pause(id);
    a.backendGate.pause('unpause', { times: 2 });
    // b never saw the pause: its acquire discovers the container paused and resumes it.
    const bAcquire = b.provider.acquire(T('two'));
    const first = await a.backendGate.nextCall('unpause');
    const aResume = a.provider.resume(id);
    const second = await a.backendGate.nextCall('unpause');
    await first.release();
    await second.release();
    await aResume;
    expect(await bAcquire).toBe(id);
    expect(a.backend.isPaused(id)).toBe(false);
    expect(await b.provider.get(id)!.readFile('/mnt/user-data/workspace/p.txt')).toBe(
      'paused on a\n',
    );
    // b owns it now.
    expect(a.lease(id)).toBe(`own:${b.ownerId}`);
  });

  it('another instance acquiring the thread of a paused sandbox resumes it (transparently)', async () => {
    const a = await harness({ crossProcess: true });
    const b = await a.peer();
    const id = await a.provider.acquire(T('x'));
    await a.provider.pause(id);
    expect(await b.provider.acquire(T('x'))).toBe(id);
    expect(a.backend.isPaused(id)).toBe(false);
    expect(await b.provider.get(id)!.exec('echo on b')).toMatchObject({ exitCode: 0 });
  });
});
