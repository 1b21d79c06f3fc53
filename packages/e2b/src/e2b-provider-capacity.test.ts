import {
  CapacityBackendError,
  MemoryCapacityLedger,
  MemoryCapacityStore,
  MemoryOwnershipStore,
  ProviderClosedError,
  SandboxCapacityExceededError,
} from '@sbx/core';
import { MemoryLeaseTable } from '@sbx/core/provider-kit';
import type { CapacityInventory, CapacityStore } from '@sbx/core';
import { ManualClock, settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { E2B_TAGS } from './metadata.js';
import { makeHarness } from './test-support.js';
import type { Harness } from './test-support.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';
import { fakeErrors } from './testing/fake-e2b-errors.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function harness(options: Parameters<typeof makeHarness>[0] = {}): Promise<Harness> {
  const h = await makeHarness(options);
  cleanups.push(h.cleanup);
  return h;
}
function sharedFake(): FakeE2BClient {
  const fake = new FakeE2BClient();
  cleanups.push(() => fake.dispose());
  return fake;
}
const thread = (t: string) => ({ userId: 'u1', threadId: t });
const reject = (replicas = 1, extra: Record<string, unknown> = {}) => ({
  replicas,
  overflow_policy: 'reject',
  ...extra,
});

async function capacityError(p: Promise<unknown>): Promise<SandboxCapacityExceededError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SandboxCapacityExceededError);
  return err as SandboxCapacityExceededError;
}

/** A capacity store that records its calls. */
function recordingLedger(inner: CapacityStore) {
  const calls: { op: string; args: unknown[] }[] = [];
  const store: CapacityStore = {
    hardLimit: inner.hardLimit,
    revision: () => inner.revision(),
    reserve: (token) => (calls.push({ op: 'reserve', args: [token] }), inner.reserve(token)),
    track: (id, token) => (calls.push({ op: 'track', args: [id, token] }), inner.track(id, token)),
    release: (id) => (calls.push({ op: 'release', args: [id] }), inner.release(id)),
    reconcile: (inv: CapacityInventory) => (
      calls.push({ op: 'reconcile', args: [inv] }),
      inner.reconcile(inv)
    ),
    close: () => inner.close(),
  };
  return { store, calls, of: (op: string) => calls.filter((c) => c.op === op) };
}

async function readyLedger(hardLimit: number, ledger = new MemoryCapacityLedger()) {
  const store = new MemoryCapacityStore({ hardLimit, ledger });
  await store.reconcile({
    expectedRevision: await store.revision(),
    entries: [],
    complete: true,
    maxAgeMs: 120_000,
  });
  return store;
}

describe('§8.3 capacity, eviction and shutdown races', () => {
  it('§8.2.49 killing a dead VM swallows a failed kill and releases the lease; a peer-owned VM is only closed', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const table = new MemoryLeaseTable({ clock });
    const peer = new MemoryOwnershipStore({ table, ownerId: 'peer-gateway' });
    const { provider, fake } = await harness({
      clock,
      ownership: new MemoryOwnershipStore({ table }),
    });
    const a = await provider.acquire(thread('a'));
    provider.get(a)!.markDead();
    fake.fail('kill', new Error('control plane unavailable'), { sandboxId: a });
    await provider.release(a);
    expect(fake.callsOf('kill', a)).toHaveLength(1);
    expect(fake.callsOf('close', a).length).toBeGreaterThan(0);
    expect(await peer.owner(a)).toBeUndefined();

    const b = await provider.acquire(thread('b'));
    table.set(b, 'own', peer.ownerId, 60_000);
    provider.get(b)!.markDead();
    await provider.release(b);
    expect(fake.callsOf('kill', b)).toHaveLength(0);
    expect(fake.callsOf('close', b).length).toBeGreaterThan(0);
    expect(fake.vms.get(b)!.alive).toBe(true);
    expect(await peer.owner(b)).toEqual({ state: 'own', ownerId: peer.ownerId });
  });

  it('§8.2.50 the ledger frees a VM only after a confirmed kill', async () => {
    const g = recordingLedger(await readyLedger(4));
    const { provider, fake } = await harness({ capacity: g.store });
    const a = await provider.acquire(thread('a'));
    provider.get(a)!.markDead();
    fake.fail('kill', new Error('control plane unavailable'), { sandboxId: a });
    await provider.release(a);
    expect(g.of('release')).toEqual([]);
    const b = await provider.acquire(thread('b'));
    provider.get(b)!.markDead();
    await provider.release(b);
    expect(fake.vms.get(b)!.alive).toBe(false);
    expect(g.of('release')).toEqual([{ op: 'release', args: [b] }]);
  });

  it('§8.3.66 two gateways sharing a ledger with replicas=1: one creates, the other is refused without creating', async () => {
    const fake = sharedFake();
    const ledger = new MemoryCapacityLedger();
    const g1 = recordingLedger(await readyLedger(1, ledger));
    const g2 = recordingLedger(new MemoryCapacityStore({ hardLimit: 1, ledger }));
    const a = await harness({ fake, capacity: g1.store, config: reject() });
    const b = await harness({ fake, capacity: g2.store, config: reject() });
    const id = await a.provider.acquire(thread('a'));
    const err = await capacityError(b.provider.acquire(thread('b')));
    expect(err.reason).toBe('capacity');
    expect(fake.callsOf('create')).toHaveLength(1);
    const meta = fake.vms.get(id)!.metadata;
    const token = meta[E2B_TAGS.capacityReservation];
    expect(meta[E2B_TAGS.capacityLedger]).toBe('sbx:e2b-capacity');
    expect(token).toMatch(/^[0-9a-f]{32}$/);
    expect(g1.of('track')).toEqual([{ op: 'track', args: [id, token] }]);
    expect(g1.of('reserve').length + g2.of('reserve').length).toBe(2);
  });

  it('§8.3.67 a create that raises keeps the ledger reservation but frees the local slot', async () => {
    const cap = recordingLedger(await readyLedger(3));
    const { provider, fake } = await harness({ capacity: cap.store, config: reject(3) });
    fake.fail('create', new Error('create exploded'));
    await expect(provider.acquire(thread('a'))).rejects.toThrow('create exploded');
    expect(cap.of('reserve')).toHaveLength(1);
    expect(cap.of('track')).toHaveLength(0);
    expect(cap.of('release')).toHaveLength(0);
    expect(provider.capacitySnapshot().reserved).toBe(0);
  });

  it('§8.3.68 discovery queries by metadata, tracks the VM with its (absent) token, never reserves', async () => {
    const cap = recordingLedger(await readyLedger(3));
    const { provider, fake } = await harness({ capacity: cap.store, config: reject(3) });
    const vm = await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 'a',
      },
    });
    expect(await provider.acquire(thread('a'))).toBe(vm.sandboxId);
    expect(cap.of('track')).toEqual([{ op: 'track', args: [vm.sandboxId, undefined] }]);
    expect(cap.of('reserve')).toHaveLength(0);
  });

  it('§8.3.69 reconciliation sends only this ledger’s entries with tokens, complete, max age 120 000 ms', async () => {
    const cap = recordingLedger(await readyLedger(3));
    const { provider, fake } = await harness({
      capacity: cap.store,
      config: {
        ownership: { type: 'memory', renewal_interval_seconds: 1, ttl_multiplier: 2 },
        e2b: { reconciliation_grace_seconds: 0 },
      },
    });
    const tag = { [E2B_TAGS.provider]: 'e2b_sandbox_provider' };
    const mine = await fake.seed({
      metadata: {
        ...tag,
        [E2B_TAGS.capacityLedger]: 'sbx:e2b-capacity',
        [E2B_TAGS.capacityReservation]: 'tok1',
      },
    });
    const legacy = await fake.seed({ metadata: { ...tag } });
    await fake.seed({ metadata: { ...tag, [E2B_TAGS.capacityLedger]: 'other:e2b-capacity' } });
    await provider.reconcileNow();
    const inv = cap.of('reconcile')[0]!.args[0] as CapacityInventory;
    expect(inv.complete).toBe(true);
    expect(inv.maxAgeMs).toBe(120_000);
    expect([...inv.entries].sort((x, y) => x.sandboxId.localeCompare(y.sandboxId))).toEqual(
      [
        { sandboxId: mine.sandboxId, reservationToken: 'tok1' },
        { sandboxId: legacy.sandboxId, reservationToken: undefined },
      ].sort((x, y) => x.sandboxId.localeCompare(y.sandboxId)),
    );
  });

  it('§8.3.70 a failed listing sends an empty incomplete inventory; NOT_READY and a backend error prevent creates', async () => {
    const raw = new MemoryCapacityStore({ hardLimit: 2 });
    const cap = recordingLedger(raw);
    const { provider, fake } = await harness({ capacity: cap.store, config: reject(2) });
    fake.fail('list', new Error('list down'));
    await provider.reconcileNow();
    const inv = cap.of('reconcile')[0]!.args[0] as CapacityInventory;
    expect(inv).toMatchObject({ entries: [], complete: false });
    const notReady = await capacityError(provider.acquire(thread('a')));
    expect(notReady.reason).toBe('capacity_initializing');
    await raw.close();
    const down = await capacityError(provider.acquire(thread('b')));
    expect(down.reason).toBe('capacity_backend');
    expect(down.cause).toBeInstanceOf(CapacityBackendError);
    expect(fake.callsOf('create')).toHaveLength(0);
    expect(provider.capacitySnapshot().reserved).toBe(0);
  });

  it('§8.3.71 reject with replicas=1 refuses the second acquire with retry details; release frees the slot', async () => {
    const { provider } = await harness({ config: reject() });
    const a = await provider.acquire(thread('a'));
    const err = await capacityError(provider.acquire(thread('b')));
    expect(err.replicas).toBe(1);
    expect(err.retryAfterSeconds).toBeGreaterThan(0);
    expect(err.details).toMatchObject({ code: 'SANDBOX_CAPACITY_EXCEEDED', retryable: true });
    expect(err.message).toContain("overflow_policy is 'reject'");
    await provider.release(a);
    expect(await provider.acquire(thread('b'))).toBeTruthy();
  });

  it('§8.3.72 reject evicts another thread’s warm VM before creating (ledger FULL → evict → GRANTED)', async () => {
    const cap = recordingLedger(await readyLedger(1));
    const { provider, fake } = await harness({ capacity: cap.store, config: reject() });
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    const b = await provider.acquire(thread('b'));
    expect(b).not.toBe(a);
    expect(fake.vms.get(a)!.alive).toBe(false);
    expect(cap.of('release').map((c) => c.args[0])).toContain(a);
  });

  it('§8.3.73 wait times out with "Timed out"; a waiter succeeds once another thread releases', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const { provider, fake } = await harness({
      clock,
      config: { replicas: 1, acquire_timeout: 3 },
    });
    const a = await provider.acquire(thread('a'));
    const waiting = track(provider.acquire(thread('b')));
    await settle();
    for (let i = 0; i < 4; i++) await clock.advance(1000);
    expect(waiting.status).toBe('rejected');
    expect(String((waiting.reason as Error).message)).toContain('Timed out after 3s');

    const second = track(provider.acquire(thread('c')));
    await settle();
    expect(second.settled).toBe(false);
    await provider.release(a);
    // Woken by the release (no clock advance): it evicts the parked VM and creates.
    await expect(second.promise).resolves.toMatch(/^fake-/);
    expect(fake.callsOf('create')).toHaveLength(2);
  });

  it('§8.3.74 burst allows replicas + burst_limit; reject and wait ignore burst_limit', async () => {
    const burst = await harness({
      config: { replicas: 1, overflow_policy: 'burst', burst_limit: 1 },
    });
    await burst.provider.acquire(thread('a'));
    await burst.provider.acquire(thread('b'));
    const err = await capacityError(burst.provider.acquire(thread('c')));
    expect(err.message).toContain('replicas=1, burst=1');
    const rej = await harness({ config: reject(1, { burst_limit: 5 }) });
    await rej.provider.acquire(thread('a'));
    await capacityError(rej.provider.acquire(thread('b')));
    expect(rej.provider.settings.capacityLimit).toBe(1);
  });

  it('§8.3.75 failed creates and failed bootstraps release their slot; rejections never leak', async () => {
    const { provider, fake } = await harness({ config: reject(1) });
    fake.fail('create', new Error('nope'));
    await expect(provider.acquire(thread('a'))).rejects.toThrow('nope');
    fake.fail('run', new Error('bootstrap boom'));
    await expect(provider.acquire(thread('a'))).rejects.toThrow(/bootstrap/);
    const a = await provider.acquire(thread('a'));
    for (let i = 0; i < 3; i++) await capacityError(provider.acquire(thread(`x${i}`)));
    expect(provider.capacitySnapshot()).toMatchObject({
      reserved: 0,
      transitioning: 0,
      tombstones: 0,
      active: 1,
    });
    expect(provider.get(a)).toBeDefined();
  });

  it('§8.3.76 a warm eviction whose reconnect fails keeps its slot and blocks a new create', async () => {
    const { provider, fake } = await harness({ config: reject() });
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    fake.fail('connect', fakeErrors.connectionReset(), { sandboxId: a });
    await capacityError(provider.acquire(thread('b')));
    expect(provider.capacitySnapshot()).toMatchObject({ warm: 1, total: 1 });
    expect(fake.callsOf('create')).toHaveLength(1);
  });

  it('§8.3.77 a failed warm reclaim keeps a tombstone; a later acquire retries it, kills it and proceeds', async () => {
    const { provider, fake } = await harness({ config: reject() });
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    // The reclaim's reconnect fails, and so does the tombstone retry the same acquire attempts.
    fake.fail('connect', fakeErrors.connectionReset(), { sandboxId: a, times: 2 });
    await capacityError(provider.acquire(thread('a')));
    expect(provider.tombstoneIds()).toEqual([a]);
    const b = await provider.acquire(thread('b'));
    expect(fake.vms.get(a)!.alive).toBe(false);
    expect(provider.capacitySnapshot()).toMatchObject({
      tombstones: 0,
      transitioning: 0,
      active: 1,
    });
    expect(provider.get(b)).toBeDefined();
  });

  it('§8.3.78/79 a bootstrap whose kill fails keeps a tombstone and its slot until a confirmed kill', async () => {
    const { provider, fake } = await harness({ config: reject() });
    fake.gate.pause('run', { times: 1 });
    const pending = provider.acquire(thread('a'));
    const call = await fake.gate.nextCall('run');
    const id = call.args[0] as string;
    fake.fail('kill', new Error('kill failed'), { sandboxId: id });
    call.fail(new Error('bootstrap boom'));
    await expect(pending).rejects.toThrow(/bootstrap/);
    expect(provider.tombstoneIds()).toEqual([id]);
    expect(fake.callsOf('close', id).length).toBeGreaterThan(0);
    fake.fail('kill', new Error('kill failed again'), { sandboxId: id });
    await capacityError(provider.acquire(thread('b')));
    expect(provider.tombstoneIds()).toEqual([id]);
    const b = await provider.acquire(thread('b'));
    expect(provider.tombstoneIds()).toEqual([]);
    expect(fake.vms.get(id)!.alive).toBe(false);
    expect(provider.get(b)).toBeDefined();
  });

  it('§8.3.80 a tombstone has one retry owner at a time', async () => {
    const { provider, fake } = await harness({ config: reject(1) });
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    fake.fail('connect', fakeErrors.connectionReset(), { sandboxId: a, times: 2 });
    await capacityError(provider.acquire(thread('a')));
    fake.gate.pause('connect', { times: 1 });
    const first = provider.acquire(thread('b'));
    const held = await fake.gate.nextCall('connect');
    await capacityError(provider.acquire(thread('c')));
    // the failed reclaim and its failed retry, then exactly one more retry owner
    expect(fake.callsOf('connect', a)).toHaveLength(3);
    await held.release();
    await first;
  });

  it('§8.3.81 shutdown during a failing warm reclaim reconnect still kills the VM, leaving no tombstone', async () => {
    const { provider, fake } = await harness();
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    fake.gate.pause('connect', { times: 1 });
    const pending = provider.acquire(thread('a'));
    const reconnect = await fake.gate.nextCall('connect');
    const shutdown = provider.shutdown();
    reconnect.fail(fakeErrors.connectionReset());
    await shutdown;
    await expect(pending).rejects.toBeInstanceOf(SandboxCapacityExceededError);
    expect(fake.vms.get(a)!.alive).toBe(false);
    expect(provider.tombstoneIds()).toEqual([]);
    expect(provider.remoteOpIds()).toEqual([]);
    expect(provider.capacitySnapshot()).toMatchObject({ warm: 0, transitioning: 0, total: 0 });
  });

  it('§8.3.81 shutdown during a create bootstrap whose kill fails still kills the VM through a new client', async () => {
    const { provider, fake } = await harness();
    fake.gate.pause('run', { times: 1 });
    const pending = provider.acquire(thread('a'));
    const bootstrap = await fake.gate.nextCall('run');
    const id = bootstrap.args[0] as string;
    const shutdown = provider.shutdown();
    fake.fail('kill', new Error('kill failed'), { sandboxId: id, times: 1 });
    bootstrap.fail(new Error('bootstrap failed'));
    await expect(pending).rejects.toThrow();
    await shutdown;
    expect(fake.vms.get(id)!.alive).toBe(false);
    expect(provider.tombstoneIds()).toEqual([]);
    expect(provider.remoteOpIds()).toEqual([]);
    expect(provider.capacitySnapshot()).toMatchObject({ reserved: 0, transitioning: 0, total: 0 });
  });

  it('§8.3.81 shutdown during a warm eviction whose first reconnect fails still kills the VM', async () => {
    const { provider, fake } = await harness({ config: reject() });
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    fake.gate.pause('connect', { times: 1 });
    const pending = provider.acquire(thread('b'));
    const reconnect = await fake.gate.nextCall('connect');
    const shutdown = provider.shutdown();
    reconnect.fail(fakeErrors.connectionReset());
    await expect(pending).rejects.toBeInstanceOf(SandboxCapacityExceededError);
    await shutdown;
    expect(fake.vms.get(a)!.alive).toBe(false);
    expect(fake.callsOf('create')).toHaveLength(1);
    expect(provider.tombstoneIds()).toEqual([]);
    expect(provider.remoteOpIds()).toEqual([]);
    expect(provider.capacitySnapshot()).toMatchObject({ warm: 0, transitioning: 0, total: 0 });
  });

  it('a warm eviction whose kill outlives the lease TTL keeps the del: marker until the kill settles', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const table = new MemoryLeaseTable({ clock });
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({
      clock,
      config: reject(),
      ownership: new MemoryOwnershipStore({ table }),
    });
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    fake.gate.pause('kill', { times: 1 });
    const pending = provider.acquire(thread('b'));
    const kill = await fake.gate.nextCall('kill');
    const intervalMs = provider.ownership.renewalIntervalSeconds * 1000;
    const ttlMs = provider.ownership.leaseTtlSeconds * 1000;
    for (let waited = 0; waited <= 3 * ttlMs; waited += intervalMs) await clock.advance(intervalMs);
    // A peer must not adopt the VM being killed, however long the kill takes.
    expect(await peer.take(a)).toBe(false);
    expect(await peer.owner(a)).toMatchObject({ state: 'del' });
    await kill.release();
    const b = await pending;
    expect(provider.get(b)).toBeDefined();
    expect(await peer.owner(a)).toBeUndefined();
  });

  it('§8.3.82 reset() hands tracked VMs over (left running, leases given up), zeroes reservations, wakes waiters with reason=shutdown and refuses reuse', async () => {
    const clock = new ManualClock(0);
    const table = new MemoryLeaseTable({ clock });
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({
      clock,
      config: { replicas: 1 },
      ownership: new MemoryOwnershipStore({ table }),
    });
    const a = await provider.acquire(thread('a'));
    const waiter = track(provider.acquire(thread('b')));
    await settle();
    await provider.reset();
    await settle();
    expect(waiter.status).toBe('rejected');
    expect((waiter.reason as SandboxCapacityExceededError).reason).toBe('shutdown');
    expect(String((waiter.reason as Error).message)).toContain('shutting down');
    // Reset releases; it does not destroy: a replacement finds the VM by its tags.
    expect(fake.vms.get(a)!.alive).toBe(true);
    expect(await peer.owner(a)).toBeUndefined();
    expect(provider.capacitySnapshot()).toMatchObject({ reserved: 0, active: 0, total: 0 });
    await expect(provider.acquire(thread('c'))).rejects.toBeInstanceOf(ProviderClosedError);
    expect(fake.callsOf('create')).toHaveLength(1);
    // A shutdown after the reset kills nothing it handed over.
    await provider.shutdown();
    expect(fake.vms.get(a)!.alive).toBe(true);
  });

  it('§8.3.83 SDK lifecycle calls run on a bounded pool: max(4, min(32, limit + 1))', async () => {
    const { provider, fake } = await harness({
      config: { replicas: 10, overflow_policy: 'reject' },
    });
    expect(provider.settings.sdkConcurrency).toBe(11);
    fake.gate.pause('create');
    const pending = Array.from({ length: 10 }, (_, i) => provider.acquire(thread(`p${i}`)));
    await settle(20);
    expect(fake.gate.waiting('create')).toBe(10);
    await fake.gate.releaseAll('create');
    await Promise.all(pending);
    const small = await harness({ config: { replicas: 1 } });
    expect(small.provider.settings.sdkConcurrency).toBe(4);
  });

  it('§8.3.84 a slow release keeps its slot counted, so a concurrent acquire is rejected', async () => {
    const { provider, fake } = await harness({ config: reject() });
    const a = await provider.acquire(thread('a'));
    fake.gate.pause('run', { times: 1 });
    const releasing = provider.release(a);
    const listing = await fake.gate.nextCall('run');
    expect(provider.capacitySnapshot()).toMatchObject({ transitioning: 1, total: 1 });
    await capacityError(provider.acquire(thread('b')));
    await listing.release();
    await releasing;
  });

  it('§8.3.85 shutdown wakes a waiter with a "shutting down" error and no extra create', async () => {
    const { provider, fake } = await harness({ config: { replicas: 1 } });
    await provider.acquire(thread('a'));
    const waiter = provider.acquire(thread('b'));
    await settle();
    await provider.shutdown();
    const err = await capacityError(waiter);
    expect(err.message).toContain('shutting down');
    expect(fake.callsOf('create')).toHaveLength(1);
  });

  it('§8.3.86 shutdown after create returns kills the VM, retrying a failed kill once through a new client', async () => {
    const { provider, fake } = await harness();
    fake.gate.pause('create', { phase: 'after', times: 1 });
    const pending = provider.acquire(thread('a'));
    const created = await fake.gate.nextCall('create');
    await provider.shutdown();
    const id = [...fake.vms.keys()][0]!;
    fake.fail('kill', new Error('kill failed'), { times: 1 });
    await created.release();
    const err = await capacityError(pending);
    expect(err.reason).toBe('shutdown');
    expect(err.message).toContain('cleaned up');
    expect(fake.callsOf('kill', id)).toHaveLength(2);
    expect(fake.vms.get(id)!.alive).toBe(false);
    expect(provider.remoteOpIds()).toEqual([]);
  });

  it('§8.3.86 when the retry cannot connect either, the error says so and the id stays tracked', async () => {
    const { provider, fake } = await harness();
    fake.gate.pause('create', { phase: 'after', times: 1 });
    const pending = provider.acquire(thread('a'));
    const created = await fake.gate.nextCall('create');
    await provider.shutdown();
    fake.fail('kill', new Error('kill failed'));
    fake.fail('connect', fakeErrors.connectionReset());
    await created.release();
    const err = await capacityError(pending);
    expect(err.message).toContain('could not confirm cleanup');
    expect(provider.remoteOpIds()).toHaveLength(1);
  });

  it('§8.3.87 with replicas=1 two concurrent acquires for different threads create exactly once', async () => {
    const { provider, fake } = await harness({ config: reject() });
    const results = await Promise.allSettled([
      provider.acquire(thread('a')),
      provider.acquire(thread('b')),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect(fake.callsOf('create')).toHaveLength(1);
  });

  it('§8.3.88 shutdown during release’s output sync kills the VM instead of parking it', async () => {
    const { provider, fake } = await harness();
    const a = await provider.acquire(thread('a'));
    fake.gate.pause('run', { times: 1 });
    const releasing = provider.release(a);
    const listing = await fake.gate.nextCall('run');
    const shutdown = provider.shutdown();
    await listing.release();
    await releasing;
    await shutdown;
    expect(fake.vms.get(a)!.alive).toBe(false);
    expect(provider.warmIds()).toEqual([]);
  });

  it('§8.3.88 shutdown during release’s client close still finds and kills the parked VM', async () => {
    const { provider, fake } = await harness();
    const a = await provider.acquire(thread('a'));
    fake.gate.pause('close', { times: 1 });
    const releasing = provider.release(a);
    const closing = await fake.gate.nextCall('close');
    await provider.shutdown();
    expect(fake.vms.get(a)!.alive).toBe(false);
    expect(fake.callsOf('connect', a)).toHaveLength(1);
    await closing.release();
    await releasing;
  });

  it('§8.3.89 a slow close during release neither double-counts nor blocks the later reclaim', async () => {
    const { provider, fake } = await harness({ config: reject() });
    const a = await provider.acquire(thread('a'));
    fake.gate.pause('close', { times: 1 });
    const releasing = provider.release(a);
    const closing = await fake.gate.nextCall('close');
    expect(provider.capacitySnapshot()).toMatchObject({ warm: 1, transitioning: 0, total: 1 });
    const again = provider.acquire(thread('a'));
    await closing.release();
    await releasing;
    expect(await again).toBe(a);
  });

  it('§8.3.90 shutdown during a create bootstrap raises a capacity error and kills the VM', async () => {
    const { provider, fake } = await harness();
    fake.gate.pause('run', { times: 1 });
    const pending = provider.acquire(thread('a'));
    const bootstrap = await fake.gate.nextCall('run');
    const id = bootstrap.args[0] as string;
    const shutdown = provider.shutdown();
    await bootstrap.release();
    const err = await capacityError(pending);
    expect(err.reason).toBe('shutdown');
    await shutdown;
    expect(fake.vms.get(id)!.alive).toBe(false);
    expect(provider.get(id)).toBeUndefined();
  });

  it('§8.3.90 shutdown during a reclaim does not register the VM and kills it', async () => {
    const { provider, fake } = await harness();
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    fake.gate.pause('run', { times: 2 });
    const pending = provider.acquire(thread('a'));
    await (await fake.gate.nextCall('run')).release(); // liveness probe of the reclaim
    const bootstrap = await fake.gate.nextCall('run');
    const shutdown = provider.shutdown();
    await bootstrap.release();
    const err = await capacityError(pending); // the reclaim gave up; the create path refuses
    expect(err.reason).toBe('shutdown');
    await shutdown;
    expect(provider.get(a)).toBeUndefined();
    expect(fake.vms.get(a)!.alive).toBe(false);
    expect(provider.tombstoneIds()).toEqual([]);
    expect(provider.remoteOpIds()).toEqual([]);
  });

  it('§8.3.91 discovery during shutdown raises reason=shutdown and logs "shutting down"', async () => {
    const { provider, fake, logger } = await harness();
    await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 'a',
      },
    });
    fake.gate.pause('run', { times: 1 });
    const pending = provider.acquire(thread('a'));
    const probe = await fake.gate.nextCall('run');
    const shutdown = provider.shutdown();
    await probe.release();
    const err = await capacityError(pending);
    expect(err.reason).toBe('shutdown');
    expect(logger.text('warn')).toContain('shutting down');
    expect(logger.text('warn')).not.toContain('capacity is full');
    await shutdown;
  });

  it('§8.3.91 discovery with full capacity raises without bootstrapping or killing the VM (client closed)', async () => {
    const { provider, fake, logger } = await harness({ config: reject() });
    await provider.acquire(thread('busy'));
    const vm = await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 'a',
      },
    });
    await capacityError(provider.acquire(thread('a')));
    expect(fake.callsOf('kill', vm.sandboxId)).toHaveLength(0);
    expect(fake.callsOf('close', vm.sandboxId)).toHaveLength(1);
    expect(fake.callsOf('run', vm.sandboxId)).toHaveLength(1); // the liveness probe only
    expect(logger.text('warn')).toContain('capacity is full');
  });

  it('§8.3.92 a discovery bootstrap whose kill fails turns the reservation into a tombstone', async () => {
    const { provider, fake } = await harness({ config: reject(3) });
    const vm = await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 'a',
      },
    });
    fake.gate.pause('run', { times: 2 });
    const pending = provider.acquire(thread('a'));
    await (await fake.gate.nextCall('run')).release();
    fake.fail('kill', new Error('kill failed'), { sandboxId: vm.sandboxId });
    (await fake.gate.nextCall('run')).fail(new Error('bootstrap boom'));
    await pending;
    expect(provider.capacitySnapshot()).toMatchObject({
      reserved: 0,
      transitioning: 0,
      tombstones: 1,
      active: 1,
    });
    expect(provider.remoteOpIds()).toEqual([]);
  });

  it('§8.3.93 shutdown between discovery’s reservation and commit closes the client and kills nothing', async () => {
    const table = new MemoryLeaseTable();
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({ ownership: new MemoryOwnershipStore({ table }) });
    const vm = await fake.seed({
      metadata: {
        [E2B_TAGS.provider]: 'e2b_sandbox_provider',
        [E2B_TAGS.user]: 'u1',
        [E2B_TAGS.thread]: 'a',
      },
    });
    await peer.take(vm.sandboxId);
    fake.gate.pause('run', { times: 2 });
    const pending = provider.acquire(thread('a'));
    await (await fake.gate.nextCall('run')).release(); // probe
    const bootstrap = await fake.gate.nextCall('run');
    await peer.take(vm.sandboxId); // the peer takes it back while we bootstrap
    const shutdown = provider.shutdown();
    await bootstrap.release();
    await pending.catch(() => undefined);
    await shutdown;
    expect(fake.vms.get(vm.sandboxId)!.alive).toBe(true);
    expect(fake.callsOf('kill', vm.sandboxId)).toHaveLength(0);
    expect(provider.capacitySnapshot().reserved).toBe(0);
  });

  it('§8.3.99 evicting a peer-owned warm VM forgets it locally without connect or kill', async () => {
    const table = new MemoryLeaseTable();
    const peer = new MemoryOwnershipStore({ table });
    const { provider, fake } = await harness({
      ownership: new MemoryOwnershipStore({ table }),
      config: reject(),
    });
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    await peer.take(a);
    const connects = fake.callsOf('connect', a).length;
    await provider.acquire(thread('b'));
    expect(fake.callsOf('connect', a)).toHaveLength(connects);
    expect(fake.vms.get(a)!.alive).toBe(true);
    expect(provider.warmIds()).toEqual([]);
  });

  it('§8.3.99 a failed eviction kill releases our destroy lease and keeps the VM', async () => {
    const { provider, fake, ownership } = await harness({ config: reject() });
    const a = await provider.acquire(thread('a'));
    await provider.release(a);
    fake.fail('kill', new Error('kill failed'), { sandboxId: a });
    await capacityError(provider.acquire(thread('b')));
    expect(await ownership.owner(a)).toBeUndefined();
    expect(provider.warmIds()).toEqual([a]);
  });
});
