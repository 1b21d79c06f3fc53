import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClockTimeoutOptions, ClockTimer } from '../clock.js';
import { AbortedError, isSbxError, OwnershipBackendError } from '../errors.js';
import { MemoryLeaseTable, MemoryOwnershipStore } from '../memory-ownership-store.js';
import type { ClaimOptions, OwnershipStore } from '../ownership-store.js';
import type {
  OrphanCollectingProvider,
  OrphanReapReport,
  ReapOrphansOptions,
  SandboxListingProvider,
} from '../sandbox-inspection.js';
import type { SandboxProvider } from '../sandbox-provider.js';
import { settle, track } from './deferred.js';
import { ManualClock } from './manual-clock.js';
import { rejectionOf } from './rejection.js';

/** What the suite hands the factory: build the provider on exactly these. */
export interface InspectionContext {
  /** The provider's clock; the suite advances it past grace periods. */
  readonly clock: ManualClock;
  /**
   * The provider's ownership store. It shares one lease table with a peer instance the suite
   * drives, reports cross-process visibility (it has a peer), and the suite can make it fail.
   */
  readonly ownershipStore: OwnershipStore;
}

/** One provider under test, with the hooks the suite needs to stage situations in its backend. */
export interface InspectionHarness {
  /**
   * Built on the context's clock and ownership store, without background work: no renewal or
   * reconciliation timers, so a timer on the clock means the call under test is waiting on it.
   */
  readonly provider: SandboxProvider & SandboxListingProvider & OrphanCollectingProvider;
  /**
   * Starts a sandbox in the backend as another instance would (the provider does not track it),
   * stamped with the clock's current time. With `identity` it is that thread's sandbox; without,
   * an orphan that belongs to no thread. Resolves to its id. Takes no lease: the suite does that
   * through its peer when a situation needs one.
   */
  createUntracked(identity?: { userId: string; threadId: string }): Promise<string>;
  /** Whether the backend still runs the sandbox. */
  exists(id: string): Promise<boolean>;
  /**
   * How long an unowned orphan is kept, in clock milliseconds from its `createUntracked` (the
   * suite makes the provider's first look at that same instant).
   */
  readonly orphanGraceMs: number;
  /**
   * How the suite calls `reapOrphans`, for provider-specific options (a grace length, whether to
   * wait it out). Default: `provider.reapOrphans(options)`.
   */
  reapOrphans?(options: ReapOrphansOptions): Promise<OrphanReapReport>;
  /** Runs after the suite shut the provider down: dispose the fake backend, remove directories. */
  cleanup?(): Promise<void>;
}

export interface InspectionContractOptions {
  /**
   * How an unowned orphan's grace passes, which providers legitimately do differently:
   * - `'in-call'`: the grace counts from the provider's first sighting, so `reapOrphans` looks,
   *   waits the grace out on the clock and looks again within the one call (a fresh process has
   *   seen nothing before).
   * - `'across-calls'`: the grace counts from the orphan's own creation stamp, so a call inside it
   *   returns at once keeping the orphan, and a later call past it reaps.
   */
  orphanGrace: 'in-call' | 'across-calls';
}

const START_MS = 1_700_000_000_000;
const SELF = 'inspection-self';
const PEER = 'inspection-peer';
/**
 * The peer stands for a live instance that renews its leases. A TTL far beyond any grace keeps
 * them live across the suite's clock jumps without a renewal loop (the provider's own store gets
 * the same, so only the rules under test decide what lapses).
 */
const LEASE_TTL_SECONDS = 30 * 24 * 3600;

/** A manual clock that wakes the suite when something starts waiting on it. */
class WatchedClock extends ManualClock {
  #wakers: (() => void)[] = [];

  override setTimeout(
    callback: () => void | Promise<void>,
    ms: number,
    options?: ClockTimeoutOptions,
  ): ClockTimer {
    const timer = super.setTimeout(callback, ms, options);
    for (const wake of this.#wakers.splice(0)) wake();
    return timer;
  }

  /** Resolves once `call` has settled or a timer is pending on the clock. */
  waitingOrSettled(call: Promise<unknown>): Promise<void> {
    if (this.pendingTimers > 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#wakers.push(resolve);
      call.then(
        () => resolve(),
        () => resolve(),
      );
    });
  }
}

type StoreWrite = 'take' | 'claim' | 'claim(forDestroy)' | 'renew' | 'release';

/**
 * The provider's store: a memory store on the shared table that records every write and, while
 * `broken`, answers nothing (every call rejects with `OwnershipBackendError`).
 */
class SuiteOwnershipStore implements OwnershipStore {
  readonly supportsCrossProcess = true;
  readonly writes: StoreWrite[] = [];
  broken = false;

  constructor(private readonly inner: OwnershipStore) {}

  get ownerId(): string {
    return this.inner.ownerId;
  }

  #gate<T>(write: StoreWrite | undefined, run: () => Promise<T>): Promise<T> {
    if (write !== undefined) this.writes.push(write);
    if (this.broken) {
      return Promise.reject(new OwnershipBackendError('the ownership store cannot answer'));
    }
    return run();
  }

  take(id: string) {
    return this.#gate('take', () => this.inner.take(id));
  }
  claim(id: string, options?: ClaimOptions) {
    const write = options?.forDestroy ? 'claim(forDestroy)' : 'claim';
    return this.#gate(write, () => this.inner.claim(id, options));
  }
  renew(id: string) {
    return this.#gate('renew', () => this.inner.renew(id));
  }
  release(id: string) {
    return this.#gate('release', () => this.inner.release(id));
  }
  owner(id: string) {
    return this.#gate(undefined, () => this.inner.owner(id));
  }
  close() {
    return this.inner.close();
  }
}

const sorted = (ids: readonly string[]) => [...ids].sort();
const keptIds = (report: OrphanReapReport) => sorted(report.kept.map((k) => k.id));
const reasonOf = (report: OrphanReapReport, id: string) =>
  report.kept.find((k) => k.id === id)?.reason;

function expectAborted(err: unknown): void {
  expect(err).toBeInstanceOf(Error);
  expect(isSbxError(err) && err.code).toBe(AbortedError.CODE);
}

/**
 * The conformance suite of the inspection capabilities behind `sbx ls` / `sbx gc`
 * (`listSandboxes`, `reapOrphans`): listings are read-only, a dry run predicts the real run
 * without claiming or destroying, a live peer's lease and this instance's own sandboxes are kept,
 * an orphan goes only past its grace and leaves no lease behind, a store that cannot answer keeps
 * a sandbox, and an aborted call destroys nothing. `make` is called for every test with a fresh
 * clock and ownership store. Call it at the top level of a test file.
 */
export function describeInspectionContract(
  name: string,
  make: (context: InspectionContext) => Promise<InspectionHarness>,
  options: InspectionContractOptions,
): void {
  describe(`${name}: inspection contract`, () => {
    let clock: WatchedClock;
    let store: SuiteOwnershipStore;
    let peer: MemoryOwnershipStore;
    let h: InspectionHarness;
    let made: InspectionHarness | undefined;

    beforeEach(async () => {
      made = undefined;
      clock = new WatchedClock(START_MS);
      const table = new MemoryLeaseTable({ clock });
      store = new SuiteOwnershipStore(
        new MemoryOwnershipStore({ table, ownerId: SELF, ttlSeconds: LEASE_TTL_SECONDS }),
      );
      peer = new MemoryOwnershipStore({ table, ownerId: PEER, ttlSeconds: LEASE_TTL_SECONDS });
      made = h = await make({ clock, ownershipStore: store });
    });

    afterEach(async () => {
      store.broken = false;
      await made?.provider.shutdown();
      await made?.cleanup?.();
    });

    const reap = (o: ReapOrphansOptions = {}) =>
      h.reapOrphans ? h.reapOrphans(o) : h.provider.reapOrphans(o);

    /** Lets a call run to its end, moving the clock whenever all it does is wait on it. */
    async function runToEnd<T>(call: Promise<T>): Promise<T> {
      const pending = track(call);
      for (;;) {
        await clock.waitingOrSettled(call);
        // Only a call that is quiescent is waiting on the clock rather than on I/O with a timeout.
        await settle();
        if (pending.settled) return call;
        const due = clock.nextDueAt();
        if (due !== undefined) await clock.advanceTo(due);
      }
    }

    /** The raw lease of each id as the peer reads it (`own:<owner>`, `del:<owner>`, absent). */
    async function leases(ids: readonly string[]): Promise<(string | undefined)[]> {
      return Promise.all(
        ids.map(async (id) => {
          const holder = await peer.owner(id);
          return holder && `${holder.state}:${holder.ownerId}`;
        }),
      );
    }

    async function running(ids: readonly string[]): Promise<string[]> {
      const alive = await Promise.all(ids.map((id) => h.exists(id)));
      return ids.filter((_, i) => alive[i]);
    }

    it('listSandboxes shows an acquired sandbox with its user and thread and one a peer created, and changes nothing', async () => {
      const own = await h.provider.acquire({ userId: 'u1', threadId: 'inspect-own' });
      const peers = await h.createUntracked({ userId: 'u2', threadId: 'inspect-peer' });
      await peer.take(peers);
      const orphan = await h.createUntracked();
      // Past its grace: a listing that reaped would take it.
      await clock.advance(h.orphanGraceMs);
      const ids = [own, peers, orphan];
      const before = await leases(ids);
      const writes = store.writes.length;

      const listed = await h.provider.listSandboxes();

      const byId = new Map(listed.map((s) => [s.id, s]));
      expect(byId.get(own)).toMatchObject({ id: own, userId: 'u1', threadId: 'inspect-own' });
      expect(byId.has(peers)).toBe(true);
      expect(byId.has(orphan)).toBe(true);
      expect(await running(ids)).toEqual(ids);
      expect(await leases(ids)).toEqual(before);
      expect(store.writes.slice(writes)).toEqual([]);
      expect(h.provider.get(own)).toBeDefined();
    });

    it('a dry run destroys and claims nothing, yet reports the set the real run then reaps', async () => {
      const own = await h.provider.acquire({ userId: 'u1', threadId: 'inspect-own' });
      const peers = await h.createUntracked();
      await peer.take(peers);
      const orphan = await h.createUntracked();
      await clock.advance(h.orphanGraceMs);
      const ids = [own, peers, orphan];
      const before = await leases(ids);
      const writes = store.writes.length;

      const dry = await runToEnd(reap({ dryRun: true }));

      expect(dry.reaped).toEqual([orphan]);
      expect(await running(ids)).toEqual(ids);
      expect(await leases(ids)).toEqual(before);
      expect(store.writes.slice(writes)).toEqual([]);

      const real = await runToEnd(reap());
      expect(sorted(real.reaped)).toEqual(sorted(dry.reaped));
      expect(keptIds(real)).toEqual(keptIds(dry));
      expect(await running(ids)).toEqual([own, peers]);
    });

    it('keeps a sandbox whose lease a live peer holds and one this instance has active, each with a reason', async () => {
      const own = await h.provider.acquire({ userId: 'u1', threadId: 'inspect-own' });
      // An orphan by every other rule (the next test reaps one): only the lease keeps it.
      const peers = await h.createUntracked();
      await peer.take(peers);
      await clock.advance(h.orphanGraceMs);

      for (const dryRun of [true, false]) {
        const report = await runToEnd(reap({ dryRun }));
        expect(report.reaped).toEqual([]);
        expect(reasonOf(report, peers)).toMatch(/\S/);
        expect(reasonOf(report, own)).toMatch(/\S/);
      }
      expect(await running([own, peers])).toEqual([own, peers]);
      expect(await leases([peers])).toEqual([`own:${PEER}`]);
      expect(h.provider.get(own)).toBeDefined();
    });

    it('keeps an unowned orphan inside its grace and reaps it past the grace, leaving no lease behind', async () => {
      const orphan = await h.createUntracked();
      let report: OrphanReapReport;
      if (options.orphanGrace === 'in-call') {
        const call = reap();
        const pending = track(call);
        await clock.waitingOrSettled(call);
        expect(pending.settled).toBe(false);
        await clock.advance(h.orphanGraceMs - 1);
        await settle();
        expect(pending.settled).toBe(false);
        expect(await h.exists(orphan)).toBe(true);
        await clock.advance(1);
        report = await runToEnd(call);
      } else {
        for (const step of [0, h.orphanGraceMs - 1]) {
          await clock.advance(step);
          const call = reap();
          const pending = track(call);
          await clock.waitingOrSettled(call);
          await settle();
          expect(pending.settled).toBe(true);
          const inside = await call;
          expect(inside.reaped).toEqual([]);
          expect(reasonOf(inside, orphan)).toMatch(/\S/);
          expect(await h.exists(orphan)).toBe(true);
        }
        await clock.advance(1);
        report = await runToEnd(reap());
      }
      expect(report.reaped).toEqual([orphan]);
      expect(await h.exists(orphan)).toBe(false);
      expect(await leases([orphan])).toEqual([undefined]);
    });

    it('keeps a sandbox when the ownership store cannot answer', async () => {
      const orphan = await h.createUntracked();
      await clock.advance(h.orphanGraceMs);
      store.broken = true;

      for (const dryRun of [true, false]) {
        const report = await runToEnd(reap({ dryRun }));
        expect(report.reaped).toEqual([]);
        expect(reasonOf(report, orphan)).toMatch(/\S/);
      }
      expect(await h.exists(orphan)).toBe(true);
    });

    it('an aborted signal rejects with AbortedError and destroys nothing', async () => {
      const orphan = await h.createUntracked();
      await clock.advance(h.orphanGraceMs);
      const controller = new AbortController();
      controller.abort();
      const signal = controller.signal;
      const writes = store.writes.length;

      expectAborted(await rejectionOf(h.provider.listSandboxes({ signal })));
      expectAborted(await rejectionOf(reap({ dryRun: true, signal })));
      expectAborted(await rejectionOf(reap({ signal })));
      expect(await h.exists(orphan)).toBe(true);
      expect(store.writes.slice(writes)).toEqual([]);
    });

    if (options.orphanGrace === 'in-call') {
      it('an abort while the grace is waited out rejects with AbortedError, drops its timer and destroys nothing', async () => {
        const orphan = await h.createUntracked();
        const controller = new AbortController();
        const call = reap({ signal: controller.signal });
        const pending = track(call);
        await clock.waitingOrSettled(call);
        expect(pending.settled).toBe(false);

        controller.abort();

        expectAborted(await rejectionOf(call));
        expect(clock.pendingTimers).toBe(0);
        expect(await h.exists(orphan)).toBe(true);
        expect(await leases([orphan])).toEqual([undefined]);
      });
    }
  });
}
