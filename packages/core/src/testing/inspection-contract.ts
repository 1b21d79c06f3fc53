import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AbortedError, isSbxError } from '../errors/errors.js';
import { MemoryLeaseTable, MemoryOwnershipStore } from '../ownership/memory-ownership-store.js';
import type { OwnershipStore } from '../ownership/ownership-store.js';
import { canListSandboxes, canReapOrphans } from '../contract/sandbox-inspection.js';
import type {
  OrphanCollectingProvider,
  OrphanReapReport,
  ReapOrphansOptions,
  SandboxListingProvider,
  SandboxSummary,
} from '../contract/sandbox-inspection.js';
import type { SandboxProvider } from '../contract/sandbox-provider.js';
import { settle, track } from './deferred.js';
import type { ManualClock } from './manual-clock.js';
import { RecordingOwnershipStore } from './recording-ownership-store.js';
import { rejectionOf } from './rejection.js';
import { WatchedClock } from './watched-clock.js';

/**
 * Which inspection capabilities the provider under test declares:
 * - `'list'`: `listSandboxes` only. Nothing tells it whether another instance still uses a
 *   sandbox, so it must not offer `reapOrphans` (and `sbx gc` has nothing to collect).
 * - `'list+reap'`: both, reaping through an ownership store.
 */
export type InspectionCapabilities = 'list' | 'list+reap';

/** What the suite hands a listing-only factory: build the provider on exactly this. */
export interface ListingContext {
  /** The provider's clock; a reaping suite advances it past grace periods. */
  readonly clock: ManualClock;
}

/** What the suite hands a reaping factory: build the provider on exactly these. */
export interface InspectionContext extends ListingContext {
  /**
   * The provider's ownership store. It shares one lease table with a peer instance the suite
   * drives, reports cross-process visibility (it has a peer), and the suite can make it fail.
   */
  readonly ownershipStore: OwnershipStore;
}

/** A listing-only provider under test, with the hooks the suite needs to stage its backend. */
export interface ListingHarness {
  /**
   * Built on the context's clock, without background work: no renewal, reconciliation or idle
   * timers.
   */
  readonly provider: SandboxProvider & SandboxListingProvider;
  /**
   * Starts a sandbox in the backend as another instance would (the provider does not track it),
   * stamped with the clock's current time. With `identity` it is that thread's sandbox; without,
   * an orphan that belongs to no thread. Resolves to its id as `listSandboxes` shows it. Takes no
   * lease: a reaping suite does that through its peer when a situation needs one.
   */
  createUntracked(identity?: { userId: string; threadId: string }): Promise<string>;
  /** Whether the backend still runs the sandbox (by its id as `listSandboxes` shows it). */
  exists(id: string): Promise<boolean>;
  /**
   * The id `listSandboxes` shows for a sandbox `provider.acquire` returned, for a provider that
   * lists by its backend's own ids (OpenSandbox lists by server id). Default: the same id.
   */
  listedIdOf?(sandboxId: string): string;
  /** Runs after the suite shut the provider down: dispose the fake backend, remove directories. */
  cleanup?(): Promise<void>;
}

/** A provider that lists and reaps, with the hooks the suite needs to stage its backend. */
export interface InspectionHarness extends ListingHarness {
  /**
   * Built on the context's clock and ownership store, without background work: no renewal or
   * reconciliation timers, so a timer on the clock means the call under test is waiting on it.
   */
  readonly provider: SandboxProvider & SandboxListingProvider & OrphanCollectingProvider;
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
}

/** A provider that offers `listSandboxes` only. */
export interface ListingContractOptions {
  capabilities: 'list';
}

/** A provider that offers `listSandboxes` and `reapOrphans` (the default capabilities). */
export interface InspectionContractOptions {
  capabilities?: 'list+reap';
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

const sorted = (ids: readonly string[]) => [...ids].sort();
const keptIds = (report: OrphanReapReport) => sorted(report.kept.map((k) => k.id));
const reasonOf = (report: OrphanReapReport, id: string) =>
  report.kept.find((k) => k.id === id)?.reason;

function expectAborted(err: unknown): void {
  expect(err).toBeInstanceOf(Error);
  expect(isSbxError(err) && err.code).toBe(AbortedError.CODE);
}

const sortedById = (listed: readonly SandboxSummary[]) =>
  [...listed].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/**
 * The conformance suite of the inspection capabilities behind `sbx ls` / `sbx gc`
 * (`listSandboxes`, `reapOrphans`). Every provider: it declares exactly the capabilities it has; a
 * listing shows this instance's sandboxes with their user and thread and another instance's,
 * destroys, claims and starts nothing, and a fresh instance that lists and shuts down (as `sbx ls`
 * does) leaves everything running; an aborted listing rejects with `AbortedError`. With
 * `'list+reap'` also: a dry run predicts the real run without claiming or destroying, a live
 * peer's lease and this instance's own sandboxes are kept, an orphan goes only past its grace and
 * leaves no lease behind, a store that cannot answer keeps a sandbox, and an aborted reap destroys
 * nothing. `make` is called for every test with a fresh clock (and, when reaping, ownership store).
 * Call it at the top level of a test file.
 */
export function describeInspectionContract(
  name: string,
  make: (context: ListingContext) => Promise<ListingHarness>,
  options: ListingContractOptions,
): void;
export function describeInspectionContract(
  name: string,
  make: (context: InspectionContext) => Promise<InspectionHarness>,
  options: InspectionContractOptions,
): void;
export function describeInspectionContract(
  name: string,
  make: (context: InspectionContext) => Promise<ListingHarness>,
  options: ListingContractOptions | InspectionContractOptions,
): void {
  const reaping = options.capabilities !== 'list' ? options : undefined;

  describe(`${name}: inspection contract`, () => {
    let clock: WatchedClock;
    let store: RecordingOwnershipStore;
    let peer: MemoryOwnershipStore;
    let h: ListingHarness;
    let made: ListingHarness | undefined;

    beforeEach(async () => {
      made = undefined;
      clock = new WatchedClock(START_MS);
      const table = new MemoryLeaseTable({ clock });
      store = new RecordingOwnershipStore(
        new MemoryOwnershipStore({ table, ownerId: SELF, ttlSeconds: LEASE_TTL_SECONDS }),
      );
      peer = new MemoryOwnershipStore({ table, ownerId: PEER, ttlSeconds: LEASE_TTL_SECONDS });
      // A listing-only factory gets no store (its overload types the context as `{ clock }`):
      // nothing it lists may depend on one.
      const context: InspectionContext | ListingContext = reaping
        ? { clock, ownershipStore: store }
        : { clock };
      made = h = await make(context as InspectionContext);
    });

    afterEach(async () => {
      store.broken = false;
      await made?.provider.shutdown();
      await made?.cleanup?.();
    });

    /** The harness as the overload for `'list+reap'` typed it. */
    const reaper = () => h as InspectionHarness;
    const reap = (o: ReapOrphansOptions = {}) => {
      const r = reaper();
      return r.reapOrphans ? r.reapOrphans(o) : r.provider.reapOrphans(o);
    };
    const listedIdOf = (id: string) => h.listedIdOf?.(id) ?? id;

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

    it(
      reaping
        ? 'offers both listSandboxes and reapOrphans'
        : 'offers listSandboxes and no reapOrphans, so `sbx gc` has nothing to collect',
      () => {
        expect(canListSandboxes(h.provider)).toBe(true);
        expect(canReapOrphans(h.provider)).toBe(reaping !== undefined);
      },
    );

    it('listSandboxes shows an acquired sandbox with its user and thread and one a peer created, and changes nothing', async () => {
      const acquired = await h.provider.acquire({ userId: 'u1', threadId: 'inspect-own' });
      const own = listedIdOf(acquired);
      const peers = await h.createUntracked({ userId: 'u2', threadId: 'inspect-peer' });
      const orphan = await h.createUntracked();
      if (reaping) {
        await peer.take(peers);
        // Past its grace: a listing that reaped would take it.
        await clock.advance(reaper().orphanGraceMs);
      }
      const ids = [own, peers, orphan];
      const before = await leases(ids);
      const writes = store.writes.length;

      const listed = await h.provider.listSandboxes();

      const shown = new Map(listed.map((s) => [s.id, s]));
      expect(shown.get(own)).toMatchObject({ id: own, userId: 'u1', threadId: 'inspect-own' });
      expect(shown.has(peers)).toBe(true);
      expect(shown.has(orphan)).toBe(true);
      expect(await running(ids)).toEqual(ids);
      // Whatever a listing started, stopped or took over after its read, the next one shows.
      expect(sortedById(await h.provider.listSandboxes())).toEqual(sortedById(listed));
      expect(await leases(ids)).toEqual(before);
      expect(store.writes.slice(writes)).toEqual([]);
      expect(h.provider.get(acquired)).toBeDefined();
    });

    it('a fresh instance that lists and shuts down, as `sbx ls` does, leaves every sandbox running', async () => {
      const peers = await h.createUntracked({ userId: 'u2', threadId: 'inspect-peer' });
      const orphan = await h.createUntracked();
      if (reaping) {
        await peer.take(peers);
        await clock.advance(reaper().orphanGraceMs);
      }
      const ids = [peers, orphan];
      const before = await leases(ids);

      const listed = await h.provider.listSandboxes();
      // Anything the listing adopted or claimed would be this instance's to destroy now.
      await h.provider.shutdown();

      expect(listed.map((s) => s.id)).toEqual(expect.arrayContaining(ids));
      expect(await running(ids)).toEqual(ids);
      expect(await leases(ids)).toEqual(before);
      expect(store.writes).toEqual([]);
    });

    if (reaping) {
      it('a dry run destroys and claims nothing, yet reports the set the real run then reaps', async () => {
        const own = await h.provider.acquire({ userId: 'u1', threadId: 'inspect-own' });
        const peers = await h.createUntracked();
        await peer.take(peers);
        const orphan = await h.createUntracked();
        await clock.advance(reaper().orphanGraceMs);
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
        await clock.advance(reaper().orphanGraceMs);

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
        const graceMs = reaper().orphanGraceMs;
        const orphan = await h.createUntracked();
        let report: OrphanReapReport;
        if (reaping.orphanGrace === 'in-call') {
          const call = reap();
          const pending = track(call);
          await clock.waitingOrSettled(call);
          expect(pending.settled).toBe(false);
          await clock.advance(graceMs - 1);
          await settle();
          expect(pending.settled).toBe(false);
          expect(await h.exists(orphan)).toBe(true);
          await clock.advance(1);
          report = await runToEnd(call);
        } else {
          for (const step of [0, graceMs - 1]) {
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
        await clock.advance(reaper().orphanGraceMs);
        store.broken = true;

        for (const dryRun of [true, false]) {
          const report = await runToEnd(reap({ dryRun }));
          expect(report.reaped).toEqual([]);
          expect(reasonOf(report, orphan)).toMatch(/\S/);
        }
        expect(await h.exists(orphan)).toBe(true);
      });
    }

    it(`an aborted signal rejects with AbortedError and ${reaping ? 'destroys' : 'touches'} nothing`, async () => {
      const acquired = await h.provider.acquire({ userId: 'u1', threadId: 'inspect-own' });
      const ids = [listedIdOf(acquired), await h.createUntracked()];
      // Past its grace: an aborted reap that went on would take it.
      if (reaping) await clock.advance(reaper().orphanGraceMs);
      const listed = sortedById(await h.provider.listSandboxes());
      const controller = new AbortController();
      controller.abort();
      const signal = controller.signal;
      const writes = store.writes.length;

      expectAborted(await rejectionOf(h.provider.listSandboxes({ signal })));
      if (reaping) {
        expectAborted(await rejectionOf(reap({ dryRun: true, signal })));
        expectAborted(await rejectionOf(reap({ signal })));
      }
      expect(await running(ids)).toEqual(ids);
      expect(sortedById(await h.provider.listSandboxes())).toEqual(listed);
      expect(store.writes.slice(writes)).toEqual([]);
      expect(h.provider.get(acquired)).toBeDefined();
    });

    if (reaping?.orphanGrace === 'in-call') {
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
