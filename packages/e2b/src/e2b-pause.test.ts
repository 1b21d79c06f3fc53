import { MemoryOwnershipStore, getSandboxLeaseManager, isSbxError } from '@sbx/core';
import { MemoryLeaseTable } from '@sbx/core/provider-kit';
import { describeLifecycleContract, rejectionOf } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness } from './test-support.js';
import type { Harness } from './test-support.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

// Pause and resume over the fake control plane, which keeps the SDK's rules: `Sandbox.pause(id)`
// answers true / false (already paused), a paused VM's connections fail until `connect` resumes
// it, and `list` shows paused VMs (its default states are running and paused).

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function harness(options: Parameters<typeof makeHarness>[0] = {}): Promise<Harness> {
  const h = await makeHarness({ config: { replicas: 8 }, ...options });
  cleanups.push(h.cleanup);
  return h;
}
const T = (threadId: string) => ({ userId: 'u1', threadId });
const codeOf = (error: unknown) => (isSbxError(error) ? error.code : undefined);
const PROBE = '/home/user/workspace/p.txt';

describeLifecycleContract('E2BSandboxProvider over FakeE2BClient', async () => {
  const h = await makeHarness({ config: { replicas: 32 } });
  return { provider: h.provider, cleanup: h.cleanup };
});

describe('E2B pause and resume', () => {
  it('pause parks the VM and pauses it with the SDK; its connections fail until resumed', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('p'));
    const before = h.provider.get(id)!;
    await before.writeFile('/mnt/user-data/workspace/p.txt', 'kept\n');
    await h.provider.pause(id);
    expect(h.fake.vms.get(id)?.paused).toBe(true);
    expect(h.fake.callsOf('pause', id)).toHaveLength(1);
    expect(h.provider.get(id)).toBeUndefined();
    // The SDK's rule, kept by the stand-in: a connection of a paused VM answers nothing.
    const raw = await h.fake.connect(id).then(async (remote) => {
      await h.fake.pause(id);
      return remote;
    });
    expect(await rejectionOf(raw.files.read(PROBE))).toBeInstanceOf(Error);

    await h.provider.resume(id);
    expect(h.fake.vms.get(id)?.paused).toBe(false);
    expect(await h.provider.get(id)!.readFile('/mnt/user-data/workspace/p.txt')).toBe('kept\n');
  });

  it('sbx ls shows a paused VM as paused', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('ls'));
    await h.provider.pause(id);
    const listed = (await h.provider.listSandboxes()).find((s) => s.id === id);
    expect(listed?.state).toBe('paused');
  });

  it('the fake answers pause as the SDK does: true, then false when already paused; a dead id is SandboxNotFoundError', async () => {
    const fake = new FakeE2BClient();
    cleanups.push(() => fake.dispose());
    const vm = await fake.seed({});
    expect(await fake.pause(vm.sandboxId)).toBe(true);
    expect(await fake.pause(vm.sandboxId)).toBe(false);
    fake.reap(vm.sandboxId);
    expect(((await rejectionOf(fake.pause(vm.sandboxId))) as Error).name).toBe(
      'SandboxNotFoundError',
    );
  });

  it('pause while a turn holds an execution lease is SANDBOX_BUSY; nothing is paused', async () => {
    const h = await harness();
    const manager = getSandboxLeaseManager(h.provider);
    const id = await manager.acquire('turn-1', T('busy'));
    expect(codeOf(await rejectionOf(h.provider.pause(id)))).toBe('SANDBOX_BUSY');
    expect(h.fake.callsOf('pause')).toHaveLength(0);
    expect(h.provider.get(id)).toBeDefined();
    await manager.release('turn-1');
  });

  it('a thread-less VM cannot be paused (it could never be found again to resume)', async () => {
    const h = await harness();
    const id = await h.provider.acquire();
    expect(codeOf(await rejectionOf(h.provider.pause(id)))).toBe('INVALID_ARGUMENT');
  });

  it('another gateway acquiring the thread of a paused VM resumes it by connect', async () => {
    const fake = new FakeE2BClient();
    cleanups.push(() => fake.dispose());
    const table = new MemoryLeaseTable();
    const a = await harness({ fake, ownership: new MemoryOwnershipStore({ table }) });
    const b = await harness({ fake, ownership: new MemoryOwnershipStore({ table }) });
    const id = await a.provider.acquire(T('x'));
    await a.provider.get(id)!.writeFile('/mnt/user-data/workspace/x.txt', 'from a\n');
    await a.provider.pause(id);
    await a.provider.reset();
    expect(await b.provider.acquire(T('x'))).toBe(id);
    expect(fake.vms.get(id)?.paused).toBe(false);
    expect(await b.provider.get(id)!.readFile('/mnt/user-data/workspace/x.txt')).toBe('from a\n');
  });

  it('resume racing an acquire of the thread: one reclaims, the other finds it active; one connect', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T('race'));
    await h.provider.pause(id);
    h.fake.gate.pause('connect', { times: 1 });
    const resuming = h.provider.resume(id);
    const held = await h.fake.gate.nextCall('connect');
    const acquiring = h.provider.acquire(T('race'));
    await held.release();
    await resuming;
    expect(await acquiring).toBe(id);
    expect(h.fake.callsOf('connect', id)).toHaveLength(1);
    expect(h.provider.get(id)).toBeDefined();
  });
});
