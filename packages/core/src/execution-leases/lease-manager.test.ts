import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  InvalidArgumentError,
  LeaseStateError,
  SandboxNotFoundError,
  SandboxRuntimeError,
  SerializerClosedError,
} from '../errors/errors.js';
import { acquireSandboxClientLease, runLifecycleOperation } from './lease-client.js';
import {
  COMMAND_SCOPE_CONTEXT_KEY,
  LEASE_OWNER_CONTEXT_KEY,
  SERVER_OWNED_CONTEXT_KEYS,
  createLeaseOwnerId,
  ensureSandboxLeaseOwner,
  sandboxCommandScope,
  sandboxLeaseOwner,
  scrubServerOwnedContext,
} from './lease-context.js';
import type { LeaseProvider } from './lease-types.js';
import { SandboxLeaseManager } from './lease-manager.js';
import { discardSandboxLeaseManager, getSandboxLeaseManager } from './lease-manager-registry.js';
import type { Logger } from '../logging/logger.js';
import { settle, track } from '../testing/deferred.js';
import { FakeSandboxProvider } from '../testing/fake-provider.js';

type Line = { level: string; msg: string; fields: Record<string, unknown> | undefined };

function recordingLogger(): Logger & { lines: Line[]; messages(): string[] } {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    void lines.push({ level, msg, fields });
  return {
    lines,
    messages: () => lines.map((l) => l.msg),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  };
}

const T1 = { userId: 'u1', threadId: 't1' } as const;
const T2 = { userId: 'u1', threadId: 't2' } as const;

function setup(options: { releaseParks?: boolean } = {}) {
  const logger = recordingLogger();
  const provider = new FakeSandboxProvider(options);
  const manager = new SandboxLeaseManager(provider, { logger });
  const sandboxOf = (id: string) => {
    const sb = provider.sandboxes.get(id);
    if (!sb) throw new Error(`no sandbox ${id}`);
    return sb;
  };
  return { logger, provider, manager, sandboxOf };
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** L1, checked on the manager's own snapshot. */
function expectConsistent(manager: SandboxLeaseManager): void {
  const snap = manager.snapshot();
  const fromBindings: Record<string, string[]> = {};
  for (const [owner, b] of Object.entries(snap.bindings)) {
    (fromBindings[b.sandboxId] ??= []).push(owner);
  }
  for (const list of Object.values(fromBindings)) list.sort();
  expect(snap.holders).toEqual(fromBindings);
}

describe('SandboxLeaseManager', () => {
  it('L1 each owner has at most one binding; o ∈ holders[s] ⇔ binding[o] = s', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('a', T1);
    await manager.acquire('b', T1);
    const other = await provider.acquire({ ...T1, threadId: 't1-other' });
    await manager.retain('c', s, T1);
    await manager.retain('c', other, T1); // moves c: still one binding
    expectConsistent(manager);
    expect(manager.holdersOf(s)).toEqual(['a', 'b']);
    expect(manager.holdersOf(other)).toEqual(['c']);
    expect(Object.keys(manager.snapshot().bindings).sort()).toEqual(['a', 'b', 'c']);
    await manager.release('a');
    await manager.release('b');
    await manager.release('c');
    expect(manager.snapshot()).toEqual({ bindings: {}, holders: {}, pending: [] });
  });

  it('L2 provider.release is called only by the last leaving holder of a pending sandbox or a rollback', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('normal', T1);
    await manager.reuseOrAcquire('borrower', s, { ...T1, releaseOnLast: false });
    await manager.release('borrower'); // borrower leaves first: no park
    expect(provider.released).toEqual([]);
    expect(manager.isPending(s)).toBe(false);
    await manager.acquire('normal-2', T1);
    await manager.release('normal'); // normal, not last: pending, no park
    expect(manager.isPending(s)).toBe(true);
    expect(provider.released).toEqual([]);
    await manager.release('normal-2'); // last: park
    expect(provider.released).toEqual([s]);
    expect(manager.isPending(s)).toBe(false);

    // A re-bind away from a pending sandbox is a leave too.
    const s2 = await manager.acquire('mover', T1);
    const elsewhere = await provider.acquire({ ...T1, threadId: 'x' });
    await manager.retain('mover', elsewhere, T1);
    expect(provider.released).toEqual([s, s2]);
  });

  it('L3 three normal holders: only the last release parks; scope cleanups follow release order', async () => {
    const { manager, provider, sandboxOf } = setup();
    const s = await manager.acquire('parent', T1);
    await manager.acquire('a', T1);
    await manager.acquire('b', T1);
    await manager.release('a');
    await manager.release('parent');
    expect(provider.releaseCount(s)).toBe(0);
    await manager.release('b');
    expect(provider.releaseCount(s)).toBe(1);
    expect(sandboxOf(s).releasedScopes).toEqual(['a', 'parent', 'b']);
  });

  it('L4 normal parent + borrower child: the parent defers the park to the child', async () => {
    const { manager, provider, sandboxOf } = setup();
    const s = await manager.acquire('parent', T1);
    await manager.reuseOrAcquire('child', s, { ...T1, releaseOnLast: false });
    await manager.release('parent');
    expect(provider.releaseCount(s)).toBe(0);
    await manager.release('child');
    expect(provider.releaseCount(s)).toBe(1);
    expect(sandboxOf(s).releasedScopes).toEqual(['parent', 'child']);
  });

  it('L5 a lone borrower release cleans its scope and never parks', async () => {
    const { manager, provider, sandboxOf } = setup();
    const s = await provider.acquire(T1);
    await manager.retain('borrower', s, { ...T1, releaseOnLast: false });
    await manager.release('borrower');
    expect(sandboxOf(s).releasedScopes).toEqual(['borrower']);
    expect(provider.released).toEqual([]);
    expect(manager.isPending(s)).toBe(false);
  });

  it('L6 scope cleanup runs before the park, and a failing cleanup does not prevent the park', async () => {
    const { manager, provider, sandboxOf, logger } = setup();
    const s = await manager.acquire('owner', T1);
    const sandbox = sandboxOf(s);
    sandbox.gate.pause('releaseCommandScope');
    const releasing = track(manager.release('owner'));
    const cleanup = await sandbox.gate.nextCall('releaseCommandScope');
    await settle();
    expect(provider.released).toEqual([]); // park waits for the cleanup
    sandbox.failScopeRelease = new Error('session already gone');
    await cleanup.release();
    await releasing.promise;
    expect(provider.released).toEqual([s]);
    expect(logger.messages()).toContain(
      'Sandbox command scope cleanup failed during lease release',
    );
  });

  it('L7 release is idempotent (manager and client leases)', async () => {
    const { manager, provider, sandboxOf } = setup();
    const s = await manager.acquire('owner', T1);
    await manager.release('owner');
    await manager.release('owner');
    expect(provider.releaseCount(s)).toBe(1);
    expect(sandboxOf(s).releasedScopes).toEqual(['owner']);

    const lease = await acquireSandboxClientLease(provider, {
      ...T2,
      ownerPrefix: 'gateway:artifact',
    });
    await Promise.all([lease.release(), lease.release()]);
    await lease.release();
    expect(lease.released).toBe(true);
    expect(provider.releaseCount(lease.sandboxId)).toBe(1);
    expect(lease.sandbox.releasedScopes).toEqual([lease.ownerId]);
  });

  it('L8 acquire with a live binding returns it without admit or provider acquire', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('owner', T1);
    const admits = provider.admitted.length;
    expect(await manager.acquire('owner', T1)).toBe(s);
    expect(await manager.acquire('owner', T1)).toBe(s);
    expect(provider.admitted.length).toBe(admits);
    expect(provider.gate.count('acquire')).toBe(1);
  });

  it('L9 ownership is monotonic: a borrower is upgraded by a normal bind and never downgraded back', async () => {
    const { manager, provider } = setup();
    const s = await provider.acquire(T1);
    await manager.reuseOrAcquire('fork', s, { ...T1, releaseOnLast: false });
    expect(await manager.acquire('fork', T1)).toBe(s); // upgrade, no provider acquire
    expect(provider.gate.count('acquire')).toBe(1);
    expect(manager.snapshot().bindings.fork?.releaseOnLast).toBe(true);
    await manager.release('fork');
    expect(provider.released).toEqual([s]);

    const s2 = await manager.acquire('normal', T1);
    await manager.retain('normal', s2, { ...T1, releaseOnLast: false });
    await manager.reuseOrAcquire('normal', s2, { ...T1, releaseOnLast: false });
    expect(manager.snapshot().bindings.normal?.releaseOnLast).toBe(true);
    await manager.release('normal');
    expect(provider.releaseCount(s2)).toBe(2);
  });

  it('L10 an owner cannot move between thread identities; different owners of different threads may share an id', async () => {
    const { manager } = setup();
    const s = await manager.acquire('owner', T1);
    const err = await rejectionOf(manager.acquire('owner', T2));
    expect(err).toBeInstanceOf(LeaseStateError);
    expect((err as Error).message).toBe(
      "Sandbox lease owner 'owner' cannot move between thread identities",
    );
    await expect(manager.retain('owner', s, { userId: 'u2', threadId: 't1' })).rejects.toThrow(
      LeaseStateError,
    );
    await expect(manager.reuseOrAcquire('owner', s, T2)).rejects.toThrow(LeaseStateError);
    expect(manager.bindingFor('owner')).toBe(s);

    await manager.retain('other', s, T2);
    expect(manager.holdersOf(s)).toEqual(['other', 'owner']);
  });

  it('L11 a stale binding is dropped without a park and acquire binds a fresh sandbox', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('owner', T1);
    await manager.retain('other', s, T1);
    await manager.release('other'); // makes s pending
    provider.kill(s);
    const fresh = await manager.acquire('owner', T1);
    expect(provider.gate.count('acquire')).toBe(2);
    expect(manager.bindingFor('owner')).toBe(fresh);
    expect(provider.released).toEqual([]);

    provider.kill(fresh);
    const viaReuse = await manager.reuseOrAcquire('owner', fresh, T1);
    expect(provider.gate.count('acquire')).toBe(3);
    expect(manager.bindingFor('owner')).toBe(viaReuse);
    expect(provider.released).toEqual([]);
  });

  it('L12 a last-holder release waits for a reuseOrAcquire in flight and then sees its new holder (no park)', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('leaving', T1);
    provider.gate.pause('acquire');
    // The requested id is gone, so reuseOrAcquire acquires a replacement (the same deterministic id).
    const reusing = track(manager.reuseOrAcquire('joining', 'fake:u1:gone', T1));
    const acquireCall = await provider.gate.nextCall('acquire');
    const releasing = track(manager.release('leaving'));
    await settle();
    expect(releasing.settled).toBe(false);
    await acquireCall.release();
    await releasing.promise;
    expect(reusing.value).toBe(s);
    expect(manager.holdersOf(s)).toEqual(['joining']);
    expect(provider.released).toEqual([]);
  });

  it('L12 a new acquire waits for an in-flight last-holder release, provider call included', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('leaving', T1);
    provider.gate.pause('release');
    const releasing = track(manager.release('leaving'));
    const parkCall = await provider.gate.nextCall('release');
    const acquiring = track(manager.acquire('next', T1));
    await settle();
    expect(acquiring.settled).toBe(false);
    expect(provider.gate.count('acquire')).toBe(1);
    await parkCall.release();
    await releasing.promise;
    expect(await acquiring.promise).toBe(s);
    expect(provider.gate.count('acquire')).toBe(2); // the parked sandbox is acquired afresh
    expect(provider.get(s)).toBeDefined();
  });

  it('L13 different threads never wait on each other; state stays readable during provider I/O', async () => {
    const { manager, provider } = setup();
    const held = await manager.acquire('t2-owner', T2);
    provider.gate.pause('acquire');
    const slow = track(manager.acquire('t1-owner', T1));
    const call = await provider.gate.nextCall('acquire');
    provider.gate.resume('acquire');
    expect(await manager.acquire('t2-other', T2)).toBe(held);
    await manager.release('t2-owner');
    await manager.release('t2-other');
    expect(provider.released).toEqual([held]);
    expect(manager.snapshot().bindings).toEqual({});
    expect(slow.settled).toBe(false);
    await call.release();
    expect(await slow.promise).toBe('fake:u1:t1');
  });

  it('L14 retain never checks liveness; reuseOrAcquire always does', async () => {
    const { manager, provider } = setup();
    const gets = provider.getCalls;
    await manager.retain('owner', 'fake:u1:not-live', T1);
    expect(provider.getCalls).toBe(gets);
    expect(manager.bindingFor('owner')).toBe('fake:u1:not-live');

    const reused = await manager.reuseOrAcquire('other', 'fake:u1:not-live', T1);
    expect(reused).toBe('fake:u1:t1');
    expect(provider.gate.count('acquire')).toBe(1);
  });

  it('L15 an acquire aborted during provider I/O finishes it, rolls back, binds nothing, and serializes a same-thread retain', async () => {
    const { manager, provider } = setup();
    provider.gate.pause('acquire');
    const controller = new AbortController();
    const acquiring = track(manager.acquire('owner', { ...T1, signal: controller.signal }));
    const call = await provider.gate.nextCall('acquire');
    controller.abort(new Error('turn cancelled'));
    controller.abort(new Error('again')); // a second abort changes nothing
    const retaining = track(manager.retain('retainer', 'fake:u1:t1', T1));
    await settle();
    expect(acquiring.settled).toBe(false); // not done until the provider finished
    expect(retaining.settled).toBe(false); // the key stays serialized through reconciliation
    await call.release();
    const err = await rejectionOf(acquiring.promise);
    expect(err).toBeInstanceOf(AbortedError);
    expect((err as AbortedError).cause).toEqual(new Error('turn cancelled'));
    expect(provider.released).toEqual(['fake:u1:t1']); // rolled back exactly once
    expect(manager.bindingFor('owner')).toBeUndefined();
    await retaining.promise;
    expect(manager.bindingFor('retainer')).toBe('fake:u1:t1');
  });

  it('L15 a rollback in flight keeps the key serialized until it finishes', async () => {
    const { manager, provider } = setup();
    provider.gate.pause('acquire');
    const controller = new AbortController();
    const acquiring = track(manager.acquire('owner', { ...T1, signal: controller.signal }));
    const call = await provider.gate.nextCall('acquire');
    controller.abort();
    provider.gate.pause('release');
    await call.release();
    const rollback = await provider.gate.nextCall('release');
    const retaining = track(manager.retain('retainer', 'fake:u1:t1', T1));
    await settle();
    expect(acquiring.settled).toBe(false);
    expect(retaining.settled).toBe(false);
    await rollback.release();
    expect(await rejectionOf(acquiring.promise)).toBeInstanceOf(AbortedError);
    await retaining.promise;
    expect(manager.holdersOf('fake:u1:t1')).toEqual(['retainer']);
  });

  it('L15 reconciliation failures are logged and never replace the abort', async () => {
    const { manager, provider, logger } = setup();
    for (const failing of ['acquire', 'release'] as const) {
      provider.gate.pause('acquire', { times: 1 });
      const controller = new AbortController();
      const acquiring = track(manager.acquire('owner', { ...T1, signal: controller.signal }));
      const call = await provider.gate.nextCall('acquire');
      controller.abort();
      provider.failNext(failing, new Error(`${failing} exploded`));
      await call.release();
      expect(await rejectionOf(acquiring.promise)).toBeInstanceOf(AbortedError);
    }
    expect(logger.messages()).toEqual([
      'Cancelled sandbox acquire failed during reconciliation',
      'Cancelled sandbox acquire rollback failed during reconciliation',
    ]);
    expect(manager.snapshot().bindings).toEqual({});
  });

  it('L15 a cancelled acquire whose result a borrower holds leaves the park to that borrower', async () => {
    const { manager, provider } = setup();
    const s = await provider.acquire(T1);
    await manager.retain('borrower', s, { ...T2, releaseOnLast: false });
    provider.gate.pause('acquire');
    const controller = new AbortController();
    const acquiring = track(manager.acquire('owner', { ...T1, signal: controller.signal }));
    const call = await provider.gate.nextCall('acquire');
    controller.abort();
    await call.release();
    expect(await rejectionOf(acquiring.promise)).toBeInstanceOf(AbortedError);
    expect(provider.released).toEqual([]); // not parked under the borrower
    expect(manager.isPending(s)).toBe(true);
    await manager.release('borrower');
    expect(provider.released).toEqual([s]); // nor leaked
  });

  it('L15 an abort while still waiting for the thread lock leaves no trace', async () => {
    const { manager, provider } = setup();
    provider.gate.pause('acquire');
    const first = manager.acquire('first', T1);
    const call = await provider.gate.nextCall('acquire');
    const controller = new AbortController();
    const waiting = track(manager.acquire('second', { ...T1, signal: controller.signal }));
    controller.abort();
    await settle();
    expect(waiting.reason).toBeInstanceOf(AbortedError);
    await call.release();
    await first;
    expect(Object.keys(manager.snapshot().bindings)).toEqual(['first']);
    expect(provider.gate.count('acquire')).toBe(1);
  });

  it('L16 an aborted release runs scope cleanup and park to completion before reporting the abort', async () => {
    const { manager, provider, logger } = setup();
    const s = await manager.acquire('owner', T1);
    provider.gate.pause('release', { times: 1 });
    const controller = new AbortController();
    const releasing = track(manager.release('owner', { signal: controller.signal }));
    const park = await provider.gate.nextCall('release');
    controller.abort();
    controller.abort();
    await settle();
    expect(releasing.settled).toBe(false);
    await park.release();
    await settle();
    expect(releasing.reason).toBeInstanceOf(AbortedError);
    expect(provider.released).toEqual([s]);
    expect(manager.bindingFor('owner')).toBeUndefined();

    const s2 = await manager.acquire('owner-2', T2);
    provider.failNext('release', new Error('park failed'));
    const c2 = new AbortController();
    c2.abort();
    expect(await rejectionOf(manager.release('owner-2', { signal: c2.signal }))).toBeInstanceOf(
      AbortedError,
    );
    expect(provider.released).toEqual([s, s2]);
    expect(logger.messages()).toContain('Cancelled sandbox release failed during reconciliation');
  });

  it('L17 a post-acquire lookup miss rolls back and raises SandboxNotFoundError', async () => {
    const { manager, provider } = setup();
    provider.gate.pause('acquire', { phase: 'after', times: 1 });
    const acquiring = track(manager.acquire('owner', T1));
    const call = await provider.gate.nextCall('acquire');
    provider.kill('fake:u1:t1'); // vanishes between the provider's answer and the lookup
    await call.release();
    const err = await rejectionOf(acquiring.promise);
    expect(err).toBeInstanceOf(SandboxNotFoundError);
    expect((err as SandboxNotFoundError).baseMessage).toBe('Sandbox not found after acquisition');
    expect((err as SandboxNotFoundError).sandboxId).toBe('fake:u1:t1');
    expect(manager.bindingFor('owner')).toBeUndefined();
    expect(provider.released).toEqual(['fake:u1:t1']);
  });

  it('L17 a client lease whose lookup throws releases its fresh owner before re-raising', async () => {
    const { provider } = setup();
    const boom = new Error('lookup exploded');
    let calls = 0;
    const flaky: LeaseProvider = {
      acquire: (o) => provider.acquire(o),
      release: (id) => provider.release(id),
      get: (id) => {
        calls += 1;
        // The manager's own post-acquire check passes; the lease's lookup throws.
        if (calls === 2) throw boom;
        return provider.get(id);
      },
    };
    expect(await rejectionOf(acquireSandboxClientLease(flaky, T1))).toBe(boom);
    expect(getSandboxLeaseManager(flaky).snapshot().bindings).toEqual({});
    expect(provider.released).toEqual(['fake:u1:t1']);
  });

  it('L18 a sandbox operation started under a holder finishes before the holder’s release', async () => {
    const { provider } = setup();
    const lease = await acquireSandboxClientLease(provider, { ...T1, ownerPrefix: 'agent' });
    const sibling = await acquireSandboxClientLease(provider, { ...T1, ownerPrefix: 'agent' });
    lease.sandbox.gate.pause('executeCommand');
    const controller = new AbortController();
    const events: string[] = [];
    const tool = (async () => {
      try {
        return await lease.run((sb) => sb.executeCommand('echo slow'), {
          signal: controller.signal,
        });
      } finally {
        events.push('finally');
        await lease.release();
      }
    })();
    const outcome = track(tool);
    const command = await lease.sandbox.gate.nextCall('executeCommand');
    controller.abort();
    controller.abort();
    controller.abort();
    await settle();
    expect(outcome.settled).toBe(false);
    expect(events).toEqual([]); // the hold outlives the cancelled caller until the I/O drains
    expect(getSandboxLeaseManager(provider).bindingFor(lease.ownerId)).toBe(lease.sandboxId);
    await command.release();
    expect(await rejectionOf(tool)).toBeInstanceOf(AbortedError);
    expect(events).toEqual(['finally']);
    expect(getSandboxLeaseManager(provider).bindingFor(lease.ownerId)).toBeUndefined();
    expect(getSandboxLeaseManager(provider).bindingFor(sibling.ownerId)).toBe(sibling.sandboxId);
    expect(provider.released).toEqual([]);
    await sibling.release();
    expect(provider.released).toEqual([lease.sandboxId]);
  });

  it('L18 runLifecycleOperation logs an operation failure after an abort and reports the abort', async () => {
    const logger = recordingLogger();
    const controller = new AbortController();
    const err = await rejectionOf(
      runLifecycleOperation(
        async () => {
          controller.abort();
          throw new Error('io failed');
        },
        { signal: controller.signal, logger },
      ),
    );
    expect(err).toBeInstanceOf(AbortedError);
    expect(logger.messages()).toEqual(['Cancelled sandbox operation failed while draining']);
    expect(await runLifecycleOperation(() => 42)).toBe(42);
  });

  it('L20 after close or discard, new transitions fail with "AcquireSerializer is closed"', async () => {
    const { provider } = setup();
    const manager = getSandboxLeaseManager(provider);
    await manager.acquire('owner', T1);
    discardSandboxLeaseManager(provider);
    expect(manager.closed).toBe(true);
    for (const attempt of [
      manager.acquire('x', T1),
      manager.retain('x', 'fake:u1:t1', T1),
      manager.reuseOrAcquire('x', 'fake:u1:t1', T1),
      manager.release('owner'),
    ]) {
      const err = await rejectionOf(attempt);
      expect(err).toBeInstanceOf(SerializerClosedError);
      expect((err as Error).message).toBe('AcquireSerializer is closed');
    }
    await manager.release('never-bound'); // unknown owners stay a no-op
  });

  it('L21 lease and scope ids are server-owned: caller values are scrubbed, ids are minted', () => {
    const incoming = {
      thread_id: 't1',
      sandboxLeaseOwnerId: 'agent:stolen',
      sandboxCommandScopeId: 'agent:stolen',
      sandbox_lease_owner_id: 'agent:stolen',
      sandbox_command_scope_id: 'agent:stolen',
    };
    const clean = scrubServerOwnedContext(incoming);
    expect(clean).toEqual({ thread_id: 't1' });
    expect(incoming.sandboxLeaseOwnerId).toBe('agent:stolen'); // input untouched
    expect([...SERVER_OWNED_CONTEXT_KEYS].sort()).toEqual(
      [
        'sandboxCommandScopeId',
        'sandboxLeaseOwnerId',
        'sandbox_command_scope_id',
        'sandbox_lease_owner_id',
      ].sort(),
    );
    expect(scrubServerOwnedContext(undefined)).toEqual({});

    const owner = ensureSandboxLeaseOwner(clean);
    expect(owner).toMatch(/^agent:[0-9a-f-]{36}$/);
    expect(clean[LEASE_OWNER_CONTEXT_KEY]).toBe(owner);
    expect(ensureSandboxLeaseOwner(clean)).toBe(owner);
    expect(ensureSandboxLeaseOwner('not a dict')).toBeUndefined();
    expect(sandboxLeaseOwner({ [LEASE_OWNER_CONTEXT_KEY]: '' })).toBeUndefined();
    expect(sandboxLeaseOwner({ [LEASE_OWNER_CONTEXT_KEY]: 7 })).toBeUndefined();
    expect(sandboxCommandScope({ [COMMAND_SCOPE_CONTEXT_KEY]: 'task-1' })).toBe('task-1');
    expect(createLeaseOwnerId('gateway:upload')).toMatch(/^gateway:upload:[0-9a-f-]{36}$/);
    expect(createLeaseOwnerId()).not.toBe(createLeaseOwnerId());
    expect(() => createLeaseOwnerId('')).toThrow(InvalidArgumentError);
  });

  it('L23 fork-restored reuse of a live parent binds a borrower; a gone parent gets a normal replacement', async () => {
    const { manager, provider, sandboxOf } = setup();
    const parentId = await manager.acquire('parent', T1);
    await manager.reuseOrAcquire('fork', parentId, { ...T1, releaseOnLast: false });
    expect(manager.snapshot().bindings.fork?.releaseOnLast).toBe(false);
    await manager.release('fork');
    expect(sandboxOf(parentId).releasedScopes).toEqual(['fork']);
    expect(provider.released).toEqual([]);
    await manager.release('parent');
    expect(provider.released).toEqual([parentId]); // parked; the parent client is gone now

    const replacement = await manager.reuseOrAcquire('fork-2', parentId, {
      ...T1,
      releaseOnLast: false,
    });
    expect(provider.gate.count('acquire')).toBe(2);
    expect(manager.snapshot().bindings['fork-2']?.releaseOnLast).toBe(true);
    await manager.release('fork-2');
    expect(provider.released).toEqual([parentId, replacement]);
  });

  it('L25 (core part) each client lease gets a fresh unique owner, even on a thread a run holds', async () => {
    const { provider } = setup();
    const manager = getSandboxLeaseManager(provider);
    const run = await manager.acquire('agent:run', T1);
    const upload = await acquireSandboxClientLease(provider, {
      ...T1,
      ownerPrefix: 'gateway:upload',
      releaseOnLast: false,
    });
    const artifact = await acquireSandboxClientLease(provider, {
      ...T1,
      ownerPrefix: 'gateway:artifact',
    });
    expect(upload.sandboxId).toBe(run);
    expect(upload.ownerId).toMatch(/^gateway:upload:/);
    expect(new Set([upload.ownerId, artifact.ownerId, 'agent:run']).size).toBe(3);
    // Managers are per provider object: the leases joined the run's holders.
    expect(manager.holdersOf(run)).toEqual(['agent:run', artifact.ownerId, upload.ownerId].sort());
    await upload.release();
    await artifact.release();
    expect(provider.released).toEqual([]);
    expect(manager.isPending(run)).toBe(true); // the artifact sync asked for a park
    expect(manager.holdersOf(run)).toEqual(['agent:run']);
    await manager.release('agent:run');
    expect(provider.released).toEqual([run]);
    discardSandboxLeaseManager(provider);
  });

  it('L26 an idle-teardown reservation excludes live holders and refuses new binds while held', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('owner', T1);
    expect(manager.tryReserveIdleTeardown(s)).toBeUndefined(); // someone holds it
    await manager.release('owner');
    const idle = await provider.acquire(T1);
    const reservation = manager.tryReserveIdleTeardown(idle);
    expect(reservation).toBeDefined();
    expect(manager.tryReserveIdleTeardown(idle)).toBeUndefined();

    const previous = await provider.acquire({ ...T1, threadId: 'prev' });
    await manager.retain('forked', previous, T1);
    const err = await rejectionOf(manager.retain('forked', idle, T1));
    expect(err).toBeInstanceOf(LeaseStateError);
    expect((err as Error).message).toMatch(/teardown/);
    expect(manager.bindingFor('forked')).toBe(previous); // previous binding intact

    // A late fork lookup of the reserved id binds a replacement instead of the doomed client.
    reservation?.release();
    reservation?.release();
    const again = manager.tryReserveIdleTeardown(idle);
    provider.gate.pause('acquire', { times: 1 });
    const reuse = track(manager.reuseOrAcquire('late-fork', idle, { ...T2, releaseOnLast: false }));
    const call = await provider.gate.nextCall('acquire');
    await call.release();
    await reuse.promise;
    expect(reuse.value).toBe('fake:u1:t2');
    again?.release();
  });

  it('calls provider.admit before every provider acquire; a refused admit acquires nothing', async () => {
    const { manager, provider } = setup();
    const policy = { allowedSkills: ['pdf'] };
    const err = await rejectionOf(manager.acquire('owner', { ...T1, skillPolicy: policy }));
    expect(err).toBeInstanceOf(SandboxRuntimeError);
    expect((err as Error).message).toContain('cannot enforce per-Agent skill filesystem isolation');
    expect(provider.admitted).toEqual([{ ...T1, skillPolicy: policy }]);
    expect(provider.gate.count('acquire')).toBe(0);
    expect(manager.bindingFor('owner')).toBeUndefined();
    await manager.acquire('owner', T1);
    expect(provider.admitted.length).toBe(2);
  });

  it('a provider acquire failure propagates and binds nothing', async () => {
    const { manager, provider } = setup();
    provider.failNext('acquire', new Error('no capacity'));
    await expect(manager.acquire('owner', T1)).rejects.toThrow('no capacity');
    expect(manager.snapshot()).toEqual({ bindings: {}, holders: {}, pending: [] });
  });

  it('rejects bad owners, ids and thread identities with typed errors', async () => {
    const { manager } = setup();
    await expect(manager.acquire('', T1)).rejects.toThrow(InvalidArgumentError);
    await expect(manager.acquire('o', { threadId: '' })).rejects.toThrow(InvalidArgumentError);
    await expect(manager.retain('o', '', T1)).rejects.toThrow(InvalidArgumentError);
    await expect(manager.reuseOrAcquire('o', '', T1)).rejects.toThrow(InvalidArgumentError);
    await expect(manager.release('')).rejects.toThrow(InvalidArgumentError);
    await manager.release('unknown'); // no-op
  });

  it('an empty thread id is refused by every transition before any provider call or binding', async () => {
    const { manager, provider } = setup();
    const noThread = { userId: 'u1', threadId: '' };
    for (const attempt of [
      manager.acquire('o', noThread),
      manager.retain('o', 'fake:u1:t1', noThread),
      manager.reuseOrAcquire('o', 'fake:u1:t1', noThread),
    ]) {
      const err = await rejectionOf(attempt);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).baseMessage).toBe(
        'Sandbox leases need a non-empty threadId',
      );
    }
    expect(provider.admitted).toEqual([]);
    expect(manager.snapshot().bindings).toEqual({});
  });

  it('L9 retain and reuseOrAcquire as a normal owner upgrade a live borrower binding of the same id', async () => {
    const { manager, provider } = setup();
    const s = await provider.acquire(T1);
    await manager.retain('by-retain', s, { ...T1, releaseOnLast: false });
    await manager.retain('by-reuse', s, { ...T1, releaseOnLast: false });
    await manager.retain('by-retain', s, T1);
    expect(await manager.reuseOrAcquire('by-reuse', s, T1)).toBe(s);
    expect(manager.snapshot().bindings['by-retain']?.releaseOnLast).toBe(true);
    expect(manager.snapshot().bindings['by-reuse']?.releaseOnLast).toBe(true);
    await manager.release('by-retain');
    await manager.release('by-reuse');
    expect(provider.released).toEqual([s]);
  });

  it('concurrent releases of one owner both resolve and park once', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('owner', T1);
    await Promise.all([manager.release('owner'), manager.release('owner')]);
    expect(provider.released).toEqual([s]);
    expect(manager.snapshot()).toEqual({ bindings: {}, holders: {}, pending: [] });
  });

  it('a release queued behind a move of its owner leaves the sandbox the owner holds by then', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('owner', T1);
    const other = await provider.acquire({ ...T1, threadId: 'elsewhere' });
    provider.gate.pause('acquire', { times: 1 });
    // Holds T1's lock during its provider call, so the next two queue behind it in order.
    const holding = manager.acquire('holder', T1);
    const call = await provider.gate.nextCall('acquire');
    const moving = manager.retain('owner', other, T1);
    const releasing = manager.release('owner'); // reads the binding to s, then waits
    await call.release();
    await Promise.all([holding, moving, releasing]);
    expect(manager.bindingFor('owner')).toBeUndefined();
    expect(manager.holdersOf(other)).toEqual([]);
    expect(manager.holdersOf(s)).toEqual(['holder']);
    expect(provider.released).toEqual([other]);
    expectConsistent(manager);
  });

  it('L26 an idle-teardown reservation released twice does not end a later reservation of the id', async () => {
    const { manager, provider } = setup();
    const idle = await provider.acquire(T1);
    const first = manager.tryReserveIdleTeardown(idle);
    first?.release();
    const second = manager.tryReserveIdleTeardown(idle);
    expect(second).toBeDefined();
    first?.release();
    expect(manager.tryReserveIdleTeardown(idle)).toBeUndefined(); // still the second's
    await expect(manager.retain('late', idle, T1)).rejects.toThrow(LeaseStateError);
    second?.release();
  });

  it('L10 an owner acquiring on two threads at once ends bound to one; the other fresh sandbox is rolled back', async () => {
    const { manager, provider } = setup();
    provider.gate.pause('acquire', { times: 2 });
    const onT1 = track(manager.acquire('owner', T1));
    const onT2 = track(manager.acquire('owner', T2));
    const calls = [
      await provider.gate.nextCall('acquire'),
      await provider.gate.nextCall('acquire'),
    ];
    const threadOf = (c: { args: readonly unknown[] }) =>
      (c.args[0] as { threadId: string }).threadId;
    const t1Call = calls.find((c) => threadOf(c) === 't1');
    const t2Call = calls.find((c) => threadOf(c) === 't2');
    await t1Call?.release();
    expect(await onT1.promise).toBe('fake:u1:t1');
    // Both identity checks before the provider calls passed; the bind after them must not.
    await t2Call?.release();
    const err = await rejectionOf(onT2.promise);
    expect(err).toBeInstanceOf(LeaseStateError);
    expect(manager.bindingFor('owner')).toBe('fake:u1:t1');
    expect(provider.released).toEqual(['fake:u1:t2']);
    expectConsistent(manager);
  });

  it('a rollback that parks clears a park pending from a leave of another thread (one park, not two)', async () => {
    const { manager, provider, sandboxOf } = setup();
    const s = await provider.acquire(T1);
    await manager.retain('other-thread', s, T2);
    const sandbox = sandboxOf(s);
    sandbox.gate.pause('releaseCommandScope', { times: 1 });
    // Its leave asked for the park; the park waits for the scope cleanup.
    const leaving = track(manager.release('other-thread'));
    const cleanup = await sandbox.gate.nextCall('releaseCommandScope');
    provider.gate.pause('acquire', { times: 1 });
    const controller = new AbortController();
    const acquiring = track(manager.acquire('owner', { ...T1, signal: controller.signal }));
    const call = await provider.gate.nextCall('acquire');
    controller.abort();
    await call.release();
    expect(await rejectionOf(acquiring.promise)).toBeInstanceOf(AbortedError);
    expect(provider.released).toEqual([s]); // the rollback parked it
    await cleanup.release();
    await leaving.promise;
    expect(provider.released).toEqual([s]);
    expect(manager.isPending(s)).toBe(false);
  });

  it('L11 a stale binding dropped as the last holder clears the pending park: a borrower of the revived id does not park it', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('normal', T1);
    await manager.acquire('borrower', { ...T1, releaseOnLast: false });
    await manager.release('normal');
    expect(manager.isPending(s)).toBe(true);
    provider.kill(s);
    expect(await manager.acquire('borrower', { ...T1, releaseOnLast: false })).toBe(s);
    expect(manager.isPending(s)).toBe(false);
    await manager.release('borrower');
    expect(provider.released).toEqual([]);
  });

  it('L11 a stale binding dropped while others still hold the id keeps their pending park', async () => {
    const { manager, provider } = setup();
    const s = await manager.acquire('normal', T1);
    await manager.acquire('b1', { ...T1, releaseOnLast: false });
    await manager.acquire('b2', { ...T1, releaseOnLast: false });
    await manager.release('normal'); // asks for the park; b1 and b2 still hold s
    provider.kill(s);
    expect(await manager.acquire('b1', { ...T1, releaseOnLast: false })).toBe(s); // revived
    expect(manager.isPending(s)).toBe(true);
    await manager.release('b2');
    await manager.release('b1');
    expect(provider.released).toEqual([s]);
  });

  it('an owner of another thread that joins during the last leave’s scope cleanup inherits the park', async () => {
    const { manager, provider, sandboxOf } = setup();
    const s = await manager.acquire('leaving', T1);
    const sandbox = sandboxOf(s);
    sandbox.gate.pause('releaseCommandScope', { times: 1 });
    const releasing = track(manager.release('leaving'));
    const cleanup = await sandbox.gate.nextCall('releaseCommandScope');
    await manager.retain('joiner', s, T2); // T2's lock: not held by the release
    await cleanup.release();
    await releasing.promise;
    expect(provider.released).toEqual([]); // not parked under the joiner
    expect(manager.isPending(s)).toBe(true);
    await manager.release('joiner');
    expect(provider.released).toEqual([s]);
  });

  it('L18 runLifecycleOperation does not start an operation under an already aborted signal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    let started = false;
    const err = await rejectionOf(
      runLifecycleOperation(
        () => {
          started = true;
          return 1;
        },
        { signal: controller.signal },
      ),
    );
    expect(err).toBeInstanceOf(AbortedError);
    expect(started).toBe(false);
  });

  it('L17 a client lease whose sandbox is gone right after the acquire releases its fresh owner', async () => {
    const { provider } = setup();
    let calls = 0;
    const vanishing: LeaseProvider = {
      acquire: (o) => provider.acquire(o),
      release: (id) => provider.release(id),
      get: (id) => {
        calls += 1;
        // The manager's own post-acquire check sees it; the lease's lookup no longer does.
        return calls === 2 ? undefined : provider.get(id);
      },
    };
    const err = await rejectionOf(acquireSandboxClientLease(vanishing, T1));
    expect(err).toBeInstanceOf(SandboxNotFoundError);
    expect(getSandboxLeaseManager(vanishing).snapshot().bindings).toEqual({});
    expect(provider.released).toEqual(['fake:u1:t1']);
    discardSandboxLeaseManager(vanishing);
  });

  it('L21 no owner is minted into an array context', () => {
    const context: unknown[] = [];
    expect(ensureSandboxLeaseOwner(context)).toBeUndefined();
    expect(Object.keys(context)).toEqual([]);
  });
});
