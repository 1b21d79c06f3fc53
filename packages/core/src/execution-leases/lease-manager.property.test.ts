import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AbortedError } from '../errors/errors.js';
import { SandboxLeaseManager } from './lease-manager.js';
import { FakeSandboxProvider } from '../testing/fake-provider.js';

/**
 * Random interleavings of lease transitions against a sequential model.
 *
 * Transitions of one (user, thread) are serialized in call order, and the fake provider gives each
 * thread its own sandbox id, so the model can replay each thread's operations one after another;
 * what the scheduler randomizes is how provider calls of different threads (and the cancellation
 * points inside them) interleave. Operations are issued in batches in which each owner appears at
 * most once, and every batch settles before the next, so "the owner's binding when release is
 * called" is well defined.
 */

const OWNERS = { a: 't1', b: 't1', c: 't1', d: 't2', e: 't2', f: 't3' } as const;
type Owner = keyof typeof OWNERS;
const OWNER_NAMES = Object.keys(OWNERS) as Owner[];
const THREADS = ['t1', 't2', 't3'] as const;
const USER = 'u';

type Op =
  | { kind: 'acquire'; owner: Owner; normal: boolean }
  | { kind: 'reuse'; owner: Owner; normal: boolean }
  | { kind: 'retain'; owner: Owner; normal: boolean }
  | { kind: 'cancelAcquire'; owner: Owner }
  | { kind: 'abortEarly'; owner: Owner }
  | { kind: 'release'; owner: Owner }
  | { kind: 'releaseAborted'; owner: Owner };

interface Batch {
  ops: Op[];
  killAfter: string[];
}

const ownerArb = fc.constantFrom(...OWNER_NAMES);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('acquire' as const), owner: ownerArb, normal: fc.boolean() }),
  fc.record({ kind: fc.constant('reuse' as const), owner: ownerArb, normal: fc.boolean() }),
  fc.record({ kind: fc.constant('retain' as const), owner: ownerArb, normal: fc.boolean() }),
  fc.record({ kind: fc.constant('cancelAcquire' as const), owner: ownerArb }),
  fc.record({ kind: fc.constant('abortEarly' as const), owner: ownerArb }),
  fc.record({ kind: fc.constant('release' as const), owner: ownerArb }),
  fc.record({ kind: fc.constant('release' as const), owner: ownerArb }),
  fc.record({ kind: fc.constant('releaseAborted' as const), owner: ownerArb }),
);
const batchArb: fc.Arbitrary<Batch> = fc.record({
  ops: fc.uniqueArray(opArb, { minLength: 1, maxLength: 6, selector: (op) => op.owner }),
  killAfter: fc.subarray([...THREADS]),
});

const idOf = (thread: string): string => `fake:${USER}:${thread}`;

type Outcome = string; // 'id:<id>' | 'ok' | 'aborted'

/** The specification, executed sequentially. */
class Model {
  readonly live = new Set<string>();
  readonly bindings = new Map<Owner, { id: string; normal: boolean }>();
  readonly holders = new Map<string, Set<Owner>>();
  readonly pending = new Set<string>();
  readonly releases = new Map<string, number>();
  acquires = 0;

  apply(op: Op, onProviderAcquire: (op: Op) => void): Outcome {
    const id = idOf(OWNERS[op.owner]);
    switch (op.kind) {
      case 'acquire':
      case 'cancelAcquire': {
        const normal = op.kind === 'acquire' ? op.normal : true;
        const live = this.#liveBinding(op.owner);
        if (live) {
          if (normal) live.normal = true;
          return `id:${live.id}`;
        }
        onProviderAcquire(op);
        return this.#acquireFresh(op.owner, id, normal, op.kind === 'cancelAcquire');
      }
      case 'reuse': {
        const live = this.#liveBinding(op.owner);
        if (live) {
          if (op.normal) live.normal = true;
          return `id:${live.id}`;
        }
        if (this.live.has(id)) {
          this.#bind(op.owner, id, op.normal);
          return `id:${id}`;
        }
        onProviderAcquire(op);
        return this.#acquireFresh(op.owner, id, true, false);
      }
      case 'retain':
        this.#bind(op.owner, id, op.normal);
        return 'ok';
      case 'abortEarly':
        return 'aborted';
      case 'release':
      case 'releaseAborted': {
        const b = this.bindings.get(op.owner);
        if (!b) return 'ok';
        this.#leave(op.owner, b);
        return op.kind === 'release' ? 'ok' : 'aborted';
      }
    }
  }

  kill(thread: string): void {
    this.live.delete(idOf(thread));
  }

  #liveBinding(owner: Owner): { id: string; normal: boolean } | undefined {
    const b = this.bindings.get(owner);
    if (!b) return undefined;
    if (this.live.has(b.id)) return b;
    this.#unbind(owner, b);
    if (!this.holders.has(b.id)) this.pending.delete(b.id);
    return undefined;
  }

  #acquireFresh(owner: Owner, id: string, normal: boolean, cancelled: boolean): Outcome {
    this.acquires += 1;
    this.live.add(id);
    if (!cancelled) {
      this.#bind(owner, id, normal);
      return `id:${id}`;
    }
    if (this.holders.has(id)) {
      this.pending.add(id);
    } else {
      this.pending.delete(id);
      this.#park(id);
    }
    return 'aborted';
  }

  #bind(owner: Owner, id: string, normal: boolean): void {
    const existing = this.bindings.get(owner);
    if (existing && existing.id === id) {
      if (normal) existing.normal = true;
      return;
    }
    if (existing) this.#leave(owner, existing); // unreachable with one id per thread
    this.bindings.set(owner, { id, normal });
    const set = this.holders.get(id) ?? new Set<Owner>();
    set.add(owner);
    this.holders.set(id, set);
  }

  #unbind(owner: Owner, b: { id: string }): void {
    this.bindings.delete(owner);
    const set = this.holders.get(b.id);
    set?.delete(owner);
    if (set && set.size === 0) this.holders.delete(b.id);
  }

  #leave(owner: Owner, b: { id: string; normal: boolean }): void {
    this.#unbind(owner, b);
    if (b.normal) this.pending.add(b.id);
    if (!this.holders.has(b.id) && this.pending.has(b.id)) {
      this.pending.delete(b.id);
      this.#park(b.id);
    }
  }

  #park(id: string): void {
    this.releases.set(id, (this.releases.get(id) ?? 0) + 1);
    this.live.delete(id);
  }
}

function outcomeOf(promise: Promise<unknown>): Promise<Outcome> {
  return promise.then(
    (value) => (typeof value === 'string' ? `id:${value}` : 'ok'),
    (error: unknown) => (error instanceof AbortedError ? 'aborted' : `error:${String(error)}`),
  );
}

describe('SandboxLeaseManager (property)', () => {
  it('L1/L2 under random interleavings of acquire, reuse, retain, release and cancellation across threads', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(batchArb, { minLength: 1, maxLength: 8 }),
        async (s, batches) => {
          const violations: string[] = [];
          // Per thread: the operations the model says will reach provider.acquire, in order.
          const expectedAcquires = new Map<string, { op: Op; controller?: AbortController }[]>();

          const provider = new FakeSandboxProvider({
            idPrefix: 'fake',
            intercept: async (call) => {
              if (call.method === 'acquire') {
                const thread = (call.args[0] as { threadId: string }).threadId;
                const next = expectedAcquires.get(thread)?.shift();
                if (next === undefined) violations.push(`unexpected provider.acquire on ${thread}`);
                next?.controller?.abort(new Error('cancelled during provider acquire'));
              }
              if (call.method === 'release') {
                const id = call.args[0] as string;
                // L2: a park only ever happens with nobody holding the sandbox.
                const holders = manager.holdersOf(id);
                if (holders.length > 0) violations.push(`park of ${id} while held by ${holders}`);
              }
              await s.schedule(Promise.resolve(), call.method);
            },
          });
          // Declared after the provider; the intercept only reads it once calls start.
          const manager = new SandboxLeaseManager(provider);
          const model = new Model();

          const checkL1 = (): void => {
            const snap = manager.snapshot();
            for (const [owner, b] of Object.entries(snap.bindings)) {
              if (!snap.holders[b.sandboxId]?.includes(owner)) {
                violations.push(`L1: ${owner} bound to ${b.sandboxId} but not a holder`);
              }
            }
            for (const [id, owners] of Object.entries(snap.holders)) {
              if (owners.length === 0) violations.push(`L1: empty holder set for ${id}`);
              for (const o of owners) {
                if (snap.bindings[o]?.sandboxId !== id)
                  violations.push(`L1: ${o} holds ${id} unbound`);
              }
            }
          };

          for (const batch of batches) {
            const controllers = new Map<Op, AbortController>();
            for (const op of batch.ops) {
              if (
                op.kind === 'cancelAcquire' ||
                op.kind === 'abortEarly' ||
                op.kind === 'releaseAborted'
              ) {
                controllers.set(op, new AbortController());
              }
            }
            const expected = batch.ops.map((op) =>
              model.apply(op, (reaching) => {
                const thread = OWNERS[reaching.owner];
                const list = expectedAcquires.get(thread) ?? [];
                const controller =
                  reaching.kind === 'cancelAcquire' ? controllers.get(reaching) : undefined;
                list.push(controller ? { op: reaching, controller } : { op: reaching });
                expectedAcquires.set(thread, list);
              }),
            );

            const running = batch.ops.map((op) => {
              const identity = { userId: USER, threadId: OWNERS[op.owner] };
              const signal = controllers.get(op)?.signal;
              const m = manager;
              switch (op.kind) {
                case 'acquire':
                  return outcomeOf(m.acquire(op.owner, { ...identity, releaseOnLast: op.normal }));
                case 'cancelAcquire':
                  return outcomeOf(m.acquire(op.owner, { ...identity, signal }));
                case 'abortEarly': {
                  const p = outcomeOf(m.acquire(op.owner, { ...identity, signal }));
                  controllers.get(op)?.abort();
                  return p;
                }
                case 'reuse':
                  return outcomeOf(
                    m.reuseOrAcquire(op.owner, idOf(identity.threadId), {
                      ...identity,
                      releaseOnLast: op.normal,
                    }),
                  );
                case 'retain':
                  return outcomeOf(
                    m.retain(op.owner, idOf(identity.threadId), {
                      ...identity,
                      releaseOnLast: op.normal,
                    }),
                  );
                case 'release':
                  return outcomeOf(m.release(op.owner));
                case 'releaseAborted': {
                  controllers.get(op)?.abort();
                  return outcomeOf(m.release(op.owner, { signal }));
                }
              }
            });

            const outcomes = await s.waitFor(Promise.all(running), async (step) => {
              await step();
              checkL1();
            });
            checkL1();
            expect(violations).toEqual([]);
            expect(outcomes).toEqual(expected);

            for (const thread of batch.killAfter) {
              provider.kill(idOf(thread));
              model.kill(thread);
            }
          }

          // The manager agrees with the model, and provider.release was called exactly as often,
          // for exactly the sandboxes, the model says.
          const snap = manager.snapshot();
          const modelBindings: Record<string, { sandboxId: string; releaseOnLast: boolean }> = {};
          for (const [o, b] of model.bindings)
            modelBindings[o] = { sandboxId: b.id, releaseOnLast: b.normal };
          const actualBindings: Record<string, { sandboxId: string; releaseOnLast: boolean }> = {};
          for (const [o, b] of Object.entries(snap.bindings)) {
            actualBindings[o] = { sandboxId: b.sandboxId, releaseOnLast: b.releaseOnLast };
          }
          expect(actualBindings).toEqual(modelBindings);
          expect(snap.pending).toEqual([...model.pending].sort());
          for (const thread of THREADS) {
            expect(provider.releaseCount(idOf(thread))).toBe(model.releases.get(idOf(thread)) ?? 0);
          }
          expect(provider.acquired.length).toBe(model.acquires);
          expect([...expectedAcquires.values()].flat()).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
