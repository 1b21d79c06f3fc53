import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CapacityReserveOutcome } from '../capacity/capacity-store.js';
import type { CapacityStore } from '../capacity/capacity-store.js';
import { isSbxError } from '../errors/errors.js';

/** One ledger (a shared `MemoryCapacityLedger`, one Redis hash, ...) several gateways open. */
export interface CapacityStoreHarness {
  /** A gateway's store on the shared ledger, enforcing `hardLimit`. Closed by `cleanup()`. */
  open(hardLimit: number): Promise<CapacityStore>;
  /** Every field of the ledger (empty when it does not exist). */
  fields(): Promise<Record<string, string>>;
  /** Lose all ledger state, as a Redis restart without persistence would. */
  wipe(): Promise<void>;
  /** Close every store opened and delete the ledger. */
  cleanup(): Promise<void>;
}

const LONG_MS = 3_600_000;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to reject, but it resolved');
}

function codeOf(err: unknown): string | undefined {
  return isSbxError(err) ? err.code : undefined;
}

/** Applies an empty complete inventory so the ledger admits reservations. */
async function makeReady(store: CapacityStore): Promise<void> {
  const revision = await store.revision();
  expect(
    await store.reconcile({
      expectedRevision: revision,
      entries: [],
      complete: true,
      maxAgeMs: LONG_MS,
    }),
  ).toBe(true);
}

function slotFields(fields: Record<string, string>): string[] {
  return Object.keys(fields)
    .filter((f) => !f.startsWith('meta:'))
    .sort();
}

/**
 * The `CapacityStore` conformance suite: every ledger operation of remote-providers.md §3.3 and the
 * pinned behaviours of §8.4 (numbers in the test names), with two gateways per ledger where a race
 * or a disagreement is the point.
 */
export function describeCapacityStoreContract(
  name: string,
  makeHarness: () => Promise<CapacityStoreHarness>,
): void {
  describe(`${name}: CapacityStore contract`, () => {
    let h: CapacityStoreHarness;

    beforeEach(async () => {
      h = await makeHarness();
    });

    afterEach(async () => {
      await h.cleanup();
    });

    it('revision of a missing ledger is 0 and initialises nothing', async () => {
      const s = await h.open(2);
      expect(await s.revision()).toBe(0);
      expect(await h.fields()).toEqual({});
    });

    it('reserve is NOT_READY before any complete inventory; after one, two gateways racing for one slot get one GRANTED and one FULL (8.4 #101)', async () => {
      const g1 = await h.open(1);
      const g2 = await h.open(1);
      expect(await g1.reserve('t-early')).toBe(CapacityReserveOutcome.NOT_READY);
      expect(await h.fields()).toEqual({});
      await makeReady(g1);
      const results = await Promise.all([g1.reserve('t-1'), g2.reserve('t-2')]);
      expect([...results].sort()).toEqual([
        CapacityReserveOutcome.FULL,
        CapacityReserveOutcome.GRANTED,
      ]);
      expect(slotFields(await h.fields())).toHaveLength(1);
    });

    it('after initialisation the ledger holds exactly meta:hard_limit, meta:revision, meta:state (8.4 #106)', async () => {
      const s = await h.open(3);
      await makeReady(s);
      const fields = await h.fields();
      expect(Object.keys(fields).sort()).toEqual([
        'meta:hard_limit',
        'meta:revision',
        'meta:state',
      ]);
      expect(fields['meta:hard_limit']).toBe('3');
      expect(fields['meta:state']).toBe('ready');
    });

    it('reserve admits exactly hardLimit tokens, then FULL; re-reserving a held token is GRANTED (8.4 #107)', async () => {
      const s = await h.open(3);
      await makeReady(s);
      for (const t of ['a', 'b', 'c'])
        expect(await s.reserve(t)).toBe(CapacityReserveOutcome.GRANTED);
      expect(await s.reserve('d')).toBe(CapacityReserveOutcome.FULL);
      const revision = await s.revision();
      expect(await s.reserve('b')).toBe(CapacityReserveOutcome.GRANTED);
      expect(await s.revision()).toBe(revision);
      expect(slotFields(await h.fields())).toEqual(['r:a', 'r:b', 'r:c']);
    });

    it('a reservation records the ledger time and bumps the revision', async () => {
      const s = await h.open(2);
      await makeReady(s);
      const before = await s.revision();
      const lower = Date.now() - LONG_MS;
      expect(await s.reserve('tok')).toBe(CapacityReserveOutcome.GRANTED);
      expect(await s.revision()).toBe(before + 1);
      const reservedAt = Number((await h.fields())['r:tok']);
      expect(Number.isInteger(reservedAt)).toBe(true);
      expect(reservedAt).toBeGreaterThan(lower);
    });

    it('track is idempotent: one s: entry, reservation consumed (8.4 #102)', async () => {
      const s = await h.open(2);
      await makeReady(s);
      expect(await s.reserve('tok')).toBe(CapacityReserveOutcome.GRANTED);
      await s.track('vm-1', 'tok');
      const revision = await s.revision();
      await s.track('vm-1', 'tok');
      await s.track('vm-1');
      expect(await s.revision()).toBe(revision);
      const fields = await h.fields();
      expect(slotFields(fields)).toEqual(['s:vm-1']);
      expect(fields['s:vm-1']).toBe('1');
    });

    it('track does not check the limit: an existing VM is counted even if it overflows', async () => {
      const s = await h.open(1);
      await makeReady(s);
      await s.track('vm-1');
      await s.track('vm-2');
      expect(slotFields(await h.fields())).toEqual(['s:vm-1', 's:vm-2']);
      expect(await s.reserve('tok')).toBe(CapacityReserveOutcome.FULL);
    });

    it('track on a missing ledger recreates it as initializing, which still admits nothing', async () => {
      const s = await h.open(2);
      await s.track('vm-1');
      const fields = await h.fields();
      expect(fields['meta:state']).toBe('initializing');
      expect(fields['s:vm-1']).toBe('1');
      expect(await s.reserve('tok')).toBe(CapacityReserveOutcome.NOT_READY);
    });

    it('a stale-but-successful empty inventory does not free a just-tracked slot (8.4 #102)', async () => {
      const s = await h.open(1);
      await makeReady(s);
      expect(await s.reserve('tok')).toBe(CapacityReserveOutcome.GRANTED);
      await s.track('vm-1', 'tok');
      const revision = await s.revision();
      // The listing missed the VM: it is marked missing, not removed, and keeps its slot.
      expect(
        await s.reconcile({
          expectedRevision: revision,
          entries: [],
          complete: true,
          maxAgeMs: LONG_MS,
        }),
      ).toBe(true);
      expect((await h.fields())['s:vm-1']).toMatch(/^m:\d+$/);
      expect(await s.reserve('tok-2')).toBe(CapacityReserveOutcome.FULL);
    });

    it('release is idempotent and never touches reservations (8.4 #102)', async () => {
      const s = await h.open(3);
      await makeReady(s);
      await s.reserve('tok');
      await s.track('vm-1');
      const revision = await s.revision();
      await s.release('vm-1');
      expect(await s.revision()).toBe(revision + 1);
      await s.release('vm-1');
      await s.release('tok');
      await s.release('');
      expect(await s.revision()).toBe(revision + 1);
      expect(slotFields(await h.fields())).toEqual(['r:tok']);
    });

    it('release on a missing ledger does nothing and creates nothing', async () => {
      const s = await h.open(2);
      await s.release('vm-1');
      expect(await h.fields()).toEqual({});
    });

    it('an inventory repairs a crashed create (token → s:) (8.4 #103)', async () => {
      const s = await h.open(2);
      await makeReady(s);
      expect(await s.reserve('tok')).toBe(CapacityReserveOutcome.GRANTED);
      // The gateway crashed between create and track; the VM carries its reservation token.
      const revision = await s.revision();
      expect(
        await s.reconcile({
          expectedRevision: revision,
          entries: [{ sandboxId: 'vm-1', reservationToken: 'tok' }],
          complete: false,
          maxAgeMs: LONG_MS,
        }),
      ).toBe(true);
      const fields = await h.fields();
      expect(slotFields(fields)).toEqual(['s:vm-1']);
      expect(fields['s:vm-1']).toBe('1');
      expect(await s.revision()).toBe(revision + 1);
    });

    it('a reconcile with a stale revision applies nothing (8.4 #103)', async () => {
      const g1 = await h.open(2);
      const g2 = await h.open(2);
      await makeReady(g1);
      await g1.track('vm-1');
      const revision = await g1.revision();
      await g2.reserve('tok'); // a concurrent change after g1 read the revision
      const before = await h.fields();
      expect(
        await g1.reconcile({
          expectedRevision: revision,
          entries: [],
          complete: true,
          maxAgeMs: 0,
        }),
      ).toBe(false);
      expect(await h.fields()).toEqual(before);
    });

    it('a reconcile against a missing ledger with a non-zero expected revision is STALE and initialises nothing', async () => {
      const s = await h.open(2);
      expect(
        await s.reconcile({ expectedRevision: 4, entries: [], complete: true, maxAgeMs: 0 }),
      ).toBe(false);
      expect(await h.fields()).toEqual({});
    });

    it('an incomplete inventory removes nothing and never makes the ledger ready (8.4 #104)', async () => {
      const s = await h.open(2);
      await s.track('vm-1');
      expect(
        await s.reconcile({
          expectedRevision: await s.revision(),
          entries: [],
          complete: false,
          maxAgeMs: 0,
        }),
      ).toBe(true);
      const fields = await h.fields();
      expect(fields['meta:state']).toBe('initializing');
      expect(fields['s:vm-1']).toBe('1');
      expect(await s.reserve('tok')).toBe(CapacityReserveOutcome.NOT_READY);

      await makeReady(s);
      await s.reserve('tok');
      expect(
        await s.reconcile({
          expectedRevision: await s.revision(),
          entries: [],
          complete: false,
          maxAgeMs: 0,
        }),
      ).toBe(true);
      expect(slotFields(await h.fields())).toEqual(['r:tok', 's:vm-1']);
    });

    it('a fresh reservation survives a complete inventory within its max age (8.4 #104)', async () => {
      const s = await h.open(2);
      await makeReady(s);
      await s.reserve('tok');
      expect(
        await s.reconcile({
          expectedRevision: await s.revision(),
          entries: [],
          complete: true,
          maxAgeMs: LONG_MS,
        }),
      ).toBe(true);
      expect(slotFields(await h.fields())).toEqual(['r:tok']);
    });

    it('a VM marked missing long enough is removed together with old reservations (8.4 #104)', async () => {
      const s = await h.open(3);
      await makeReady(s);
      await s.track('vm-gone');
      await s.track('vm-live');
      const first = await s.revision();
      expect(
        await s.reconcile({
          expectedRevision: first,
          entries: [{ sandboxId: 'vm-live' }],
          complete: true,
          maxAgeMs: LONG_MS,
        }),
      ).toBe(true);
      expect((await h.fields())['s:vm-gone']).toMatch(/^m:\d+$/);
      await s.reserve('old-tok');
      expect(
        await s.reconcile({
          expectedRevision: await s.revision(),
          entries: [{ sandboxId: 'vm-live' }],
          complete: true,
          maxAgeMs: 0,
        }),
      ).toBe(true);
      const fields = await h.fields();
      expect(slotFields(fields)).toEqual(['s:vm-live']);
      expect(fields['s:vm-live']).toBe('1');
    });

    it('a missing-marked VM that is listed again, or tracked, is present again', async () => {
      const s = await h.open(3);
      await makeReady(s);
      await s.track('vm-1');
      await s.track('vm-2');
      await s.reconcile({
        expectedRevision: await s.revision(),
        entries: [],
        complete: true,
        maxAgeMs: LONG_MS,
      });
      let fields = await h.fields();
      expect(fields['s:vm-1']).toMatch(/^m:/);
      expect(fields['s:vm-2']).toMatch(/^m:/);
      await s.reconcile({
        expectedRevision: await s.revision(),
        entries: [{ sandboxId: 'vm-1' }],
        complete: false,
        maxAgeMs: LONG_MS,
      });
      await s.track('vm-2');
      fields = await h.fields();
      expect(fields['s:vm-1']).toBe('1');
      expect(fields['s:vm-2']).toBe('1');
    });

    it('a second omission within the grace keeps the original missing-since time', async () => {
      const s = await h.open(2);
      await makeReady(s);
      await s.track('vm-1');
      const inventory = { entries: [], complete: true, maxAgeMs: LONG_MS } as const;
      await s.reconcile({ ...inventory, expectedRevision: await s.revision() });
      const marked = (await h.fields())['s:vm-1'];
      const revision = await s.revision();
      await s.reconcile({ ...inventory, expectedRevision: revision });
      expect((await h.fields())['s:vm-1']).toBe(marked);
      expect(await s.revision()).toBe(revision);
    });

    it('gateways configured with different hard limits fail closed with a configuration mismatch (8.4 #105)', async () => {
      const g2 = await h.open(2);
      const g3 = await h.open(3);
      await makeReady(g2);
      for (const call of [
        () => g3.revision(),
        () => g3.reserve('tok'),
        () => g3.track('vm-1'),
        () => g3.release('vm-1'),
        () => g3.reconcile({ expectedRevision: 1, entries: [], complete: true, maxAgeMs: LONG_MS }),
      ]) {
        const err = await rejection(call());
        expect(codeOf(err)).toBe('CAPACITY_BACKEND');
        expect(String((err as Error).message)).toMatch(/configuration mismatch/);
      }
      expect(await g2.reserve('tok')).toBe(CapacityReserveOutcome.GRANTED);
    });

    it('losing the ledger fails closed: NOT_READY until a complete inventory is applied again', async () => {
      const s = await h.open(2);
      await makeReady(s);
      expect(await s.reserve('tok')).toBe(CapacityReserveOutcome.GRANTED);
      await h.wipe();
      expect(await s.reserve('tok-2')).toBe(CapacityReserveOutcome.NOT_READY);
      await s.track('vm-1');
      expect(await s.reserve('tok-2')).toBe(CapacityReserveOutcome.NOT_READY);
      await makeReady(s);
      expect(await s.reserve('tok-2')).toBe(CapacityReserveOutcome.GRANTED);
      expect(await s.reserve('tok-3')).toBe(CapacityReserveOutcome.FULL);
    });

    it('an applied inventory that changes nothing does not bump the revision', async () => {
      const s = await h.open(2);
      await makeReady(s);
      await s.track('vm-1');
      const revision = await s.revision();
      expect(
        await s.reconcile({
          expectedRevision: revision,
          entries: [{ sandboxId: 'vm-1' }],
          complete: true,
          maxAgeMs: LONG_MS,
        }),
      ).toBe(true);
      expect(await s.revision()).toBe(revision);
    });

    it('rejects bad input with InvalidArgumentError before touching the ledger', async () => {
      const s = await h.open(2);
      for (const call of [
        () => s.reserve(''),
        () => s.track(''),
        () => s.reconcile({ expectedRevision: -1, entries: [], complete: true, maxAgeMs: 0 }),
        () => s.reconcile({ expectedRevision: 0, entries: [], complete: true, maxAgeMs: -5 }),
        () =>
          s.reconcile({
            expectedRevision: 0,
            entries: [{ sandboxId: '' }],
            complete: true,
            maxAgeMs: 0,
          }),
      ]) {
        expect(codeOf(await rejection(call()))).toBe('INVALID_ARGUMENT');
      }
      expect(await h.fields()).toEqual({});
    });

    it('close() is idempotent and later calls raise CapacityBackendError', async () => {
      const s = await h.open(2);
      await s.close();
      await s.close();
      expect(codeOf(await rejection(s.revision()))).toBe('CAPACITY_BACKEND');
    });
  });
}
