import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSbxError } from '../errors/errors.js';
import { RenewOutcome } from '../ownership/ownership-store.js';
import type { LeaseHolder, OwnershipStore } from '../ownership/ownership-store.js';

/**
 * One backing store (a shared `MemoryLeaseTable`, one Redis key prefix, ...) that the contract opens
 * several `OwnershipStore`s on, each acting as a different gateway instance.
 */
export interface OwnershipStoreHarness {
  /**
   * A new store on the shared backing. `ownerId` defaults to a fresh id; passing an existing store's
   * id gives a second handle of the same instance (the contract uses that, with a shorter TTL, to
   * observe whether an operation rewrote the TTL). `ttlSeconds` defaults to 60.
   */
  open(options?: { ownerId?: string; ttlSeconds?: number }): Promise<OwnershipStore>;
  /** Make this lease lapse now, as if its TTL had run out (memory: expire the entry; Redis: DEL). */
  expire(sandboxId: string): Promise<void>;
  /** Remaining lease lifetime in ms, `undefined` when absent (memory: table; Redis: PTTL). */
  remainingTtlMs(sandboxId: string): Promise<number | undefined>;
  /** Let lease time pass: a manual clock advances; a real server is waited for. */
  elapse(ms: number): Promise<void>;
  /** Close every store opened and delete what the test wrote. */
  cleanup(): Promise<void>;
}

export interface OwnershipStoreContractOptions {
  /** What the stores must report as `supportsCrossProcess`. */
  supportsCrossProcess: boolean;
}

const FULL_TTL_SECONDS = 60;
/** The TTL of the "setup" handle; an operation that rewrote the lease leaves more than this. */
const SETUP_TTL_SECONDS = 10;

type Setup = 'absent' | 'own:me' | 'del:me' | 'own:peer' | 'del:peer';
type Op = 'take' | 'claim' | 'claim(forDestroy)' | 'renew' | 'release' | 'owner';

/** What must follow `op` from `setup`: the returned value and the lease afterwards. */
interface Expectation {
  result: boolean | RenewOutcome | 'holder' | undefined;
  /** The lease afterwards, or `'unchanged'` (same value, TTL not rewritten). */
  after: 'absent' | 'own:me' | 'del:me' | 'unchanged';
}

/** aio-ownership.md §6.3, row by row. */
const DECISION_TABLE: Record<Setup, Record<Op, Expectation>> = {
  absent: {
    take: { result: true, after: 'own:me' },
    claim: { result: true, after: 'own:me' },
    'claim(forDestroy)': { result: true, after: 'del:me' },
    renew: { result: RenewOutcome.LAPSED, after: 'absent' },
    release: { result: undefined, after: 'absent' },
    owner: { result: undefined, after: 'absent' },
  },
  'own:me': {
    take: { result: true, after: 'own:me' },
    claim: { result: true, after: 'own:me' },
    'claim(forDestroy)': { result: true, after: 'del:me' },
    renew: { result: RenewOutcome.RENEWED, after: 'own:me' },
    release: { result: undefined, after: 'absent' },
    owner: { result: 'holder', after: 'unchanged' },
  },
  'del:me': {
    take: { result: false, after: 'unchanged' },
    claim: { result: false, after: 'unchanged' },
    'claim(forDestroy)': { result: true, after: 'del:me' },
    renew: { result: RenewOutcome.LOST, after: 'unchanged' },
    release: { result: undefined, after: 'absent' },
    owner: { result: 'holder', after: 'unchanged' },
  },
  'own:peer': {
    take: { result: true, after: 'own:me' },
    claim: { result: false, after: 'unchanged' },
    'claim(forDestroy)': { result: false, after: 'unchanged' },
    renew: { result: RenewOutcome.LOST, after: 'unchanged' },
    release: { result: undefined, after: 'unchanged' },
    owner: { result: 'holder', after: 'unchanged' },
  },
  'del:peer': {
    take: { result: false, after: 'unchanged' },
    claim: { result: false, after: 'unchanged' },
    'claim(forDestroy)': { result: false, after: 'unchanged' },
    renew: { result: RenewOutcome.LOST, after: 'unchanged' },
    release: { result: undefined, after: 'unchanged' },
    owner: { result: 'holder', after: 'unchanged' },
  },
};

let counter = 0;
function freshId(label: string): string {
  counter += 1;
  return `contract-${label}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to reject, but it resolved');
}

function runOp(store: OwnershipStore, op: Op, id: string): Promise<unknown> {
  switch (op) {
    case 'take':
      return store.take(id);
    case 'claim':
      return store.claim(id);
    case 'claim(forDestroy)':
      return store.claim(id, { forDestroy: true });
    case 'renew':
      return store.renew(id);
    case 'release':
      return store.release(id);
    case 'owner':
      return store.owner(id);
  }
}

/**
 * The `OwnershipStore` conformance suite: every cell of the decision table (result, resulting lease
 * and whether the TTL was rewritten), the pinned behaviours of the reference tests (aio-ownership.md
 * §9.6, numbers in the test names), TTL expiry, atomicity under concurrency, input validation and
 * `close()`. Call it at the top level of a test file.
 */
export function describeOwnershipStoreContract(
  name: string,
  makeHarness: () => Promise<OwnershipStoreHarness>,
  options: OwnershipStoreContractOptions,
): void {
  describe(`${name}: OwnershipStore contract`, () => {
    let h: OwnershipStoreHarness;
    let a: OwnershipStore;
    let b: OwnershipStore;

    beforeEach(async () => {
      h = await makeHarness();
      a = await h.open({ ttlSeconds: FULL_TTL_SECONDS });
      b = await h.open({ ttlSeconds: FULL_TTL_SECONDS });
    });

    afterEach(async () => {
      await h.cleanup();
    });

    it(`reports supportsCrossProcess = ${options.supportsCrossProcess} (9.6 #90/#97)`, () => {
      expect(a.supportsCrossProcess).toBe(options.supportsCrossProcess);
    });

    it('gives each store its own non-empty owner id', () => {
      expect(a.ownerId).not.toBe('');
      expect(a.ownerId).not.toBe(b.ownerId);
    });

    describe('decision table (aio-ownership.md §6.3)', () => {
      const setups = Object.keys(DECISION_TABLE) as Setup[];
      for (const setup of setups) {
        const row = DECISION_TABLE[setup];
        for (const op of Object.keys(row) as Op[]) {
          const expected = row[op];
          it(`${setup} × ${op} → ${String(expected.result)}, lease ${expected.after}`, async () => {
            const id = freshId('table');
            const aSetup = await h.open({ ownerId: a.ownerId, ttlSeconds: SETUP_TTL_SECONDS });
            const bSetup = await h.open({ ownerId: b.ownerId, ttlSeconds: SETUP_TTL_SECONDS });
            let before: LeaseHolder | undefined;
            if (setup === 'own:me') expect(await aSetup.claim(id)).toBe(true);
            if (setup === 'del:me') expect(await aSetup.claim(id, { forDestroy: true })).toBe(true);
            if (setup === 'own:peer') expect(await bSetup.claim(id)).toBe(true);
            if (setup === 'del:peer')
              expect(await bSetup.claim(id, { forDestroy: true })).toBe(true);
            if (setup !== 'absent') {
              before = await b.owner(id);
              expect(before).toBeDefined();
            }

            const result = await runOp(a, op, id);

            if (expected.result === 'holder') expect(result).toEqual(before);
            else expect(result).toBe(expected.result);

            const after = await b.owner(id);
            const ttl = await h.remainingTtlMs(id);
            const setupTtlMs = SETUP_TTL_SECONDS * 1000;
            switch (expected.after) {
              case 'absent':
                expect(after).toBeUndefined();
                expect(ttl).toBeUndefined();
                break;
              case 'unchanged':
                expect(after).toEqual(before);
                if (before !== undefined) {
                  // Not rewritten: still within the setup handle's shorter TTL.
                  expect(ttl).toBeDefined();
                  expect(ttl!).toBeLessThanOrEqual(setupTtlMs);
                }
                break;
              case 'own:me':
              case 'del:me':
                expect(after).toEqual({
                  state: expected.after === 'own:me' ? 'own' : 'del',
                  ownerId: a.ownerId,
                });
                // Every write resets the TTL to the full lease TTL of the writer.
                expect(ttl).toBeDefined();
                expect(ttl!).toBeGreaterThan(setupTtlMs);
                expect(ttl!).toBeLessThanOrEqual(FULL_TTL_SECONDS * 1000);
                break;
            }
          });
        }
      }
    });

    it("a's claim succeeds, b's claim fails and does not steal; owner is a (9.6 #79)", async () => {
      const id = freshId('claim');
      expect(await a.claim(id)).toBe(true);
      expect(await b.claim(id)).toBe(false);
      expect(await a.owner(id)).toEqual({ state: 'own', ownerId: a.ownerId });
      expect(await a.renew(id)).toBe(RenewOutcome.RENEWED);
    });

    it('claim is idempotent for the owner (9.6 #80)', async () => {
      const id = freshId('idem');
      expect(await a.claim(id)).toBe(true);
      expect(await a.claim(id)).toBe(true);
      expect(await a.claim(id)).toBe(true);
      expect(await b.owner(id)).toEqual({ state: 'own', ownerId: a.ownerId });
    });

    it("after TTL expiry owner is empty and a peer's claim succeeds (9.6 #81)", async () => {
      const id = freshId('ttl');
      const short = await h.open({ ownerId: a.ownerId, ttlSeconds: 0.2 });
      expect(await short.claim(id)).toBe(true);
      expect(await b.claim(id)).toBe(false);
      await h.elapse(350);
      expect(await a.owner(id)).toBeUndefined();
      expect(await b.claim(id)).toBe(true);
      expect(await a.owner(id)).toEqual({ state: 'own', ownerId: b.ownerId });
    });

    it("take transfers a live peer's lease: old owner's renew is LOST, new owner's RENEWED (9.6 #82)", async () => {
      const id = freshId('take');
      expect(await a.claim(id)).toBe(true);
      expect(await b.take(id)).toBe(true);
      expect(await a.renew(id)).toBe(RenewOutcome.LOST);
      expect(await b.renew(id)).toBe(RenewOutcome.RENEWED);
      expect(await a.owner(id)).toEqual({ state: 'own', ownerId: b.ownerId });
    });

    it('take is refused while a peer holds del:, allowed after the destroyer releases (9.6 #83)', async () => {
      const id = freshId('del-release');
      expect(await a.claim(id, { forDestroy: true })).toBe(true);
      expect(await b.take(id)).toBe(false);
      expect(await b.owner(id)).toEqual({ state: 'del', ownerId: a.ownerId });
      await a.release(id);
      expect(await b.take(id)).toBe(true);
      expect(await a.owner(id)).toEqual({ state: 'own', ownerId: b.ownerId });
    });

    it('take is allowed after a stale del: expires (a destroyer that died mid-stop) (9.6 #83)', async () => {
      const id = freshId('del-expire');
      expect(await a.claim(id, { forDestroy: true })).toBe(true);
      expect(await b.take(id)).toBe(false);
      await h.expire(id);
      expect(await b.take(id)).toBe(true);
    });

    it("the destroyer's claim(forDestroy) is idempotent; against a peer's own: it fails (9.6 #84)", async () => {
      const id = freshId('destroy');
      expect(await a.claim(id, { forDestroy: true })).toBe(true);
      expect(await a.claim(id, { forDestroy: true })).toBe(true);
      expect(await b.owner(id)).toEqual({ state: 'del', ownerId: a.ownerId });

      const other = freshId('destroy-peer');
      expect(await b.claim(other)).toBe(true);
      expect(await a.claim(other, { forDestroy: true })).toBe(false);
      expect(await a.owner(other)).toEqual({ state: 'own', ownerId: b.ownerId });
    });

    it('renew of a teardown reports LOST and does not extend del: (9.6 #85)', async () => {
      const id = freshId('renew-del');
      const aShort = await h.open({ ownerId: a.ownerId, ttlSeconds: SETUP_TTL_SECONDS });
      expect(await aShort.claim(id, { forDestroy: true })).toBe(true);
      expect(await a.renew(id)).toBe(RenewOutcome.LOST);
      expect((await h.remainingTtlMs(id))!).toBeLessThanOrEqual(SETUP_TTL_SECONDS * 1000);
      expect(await a.owner(id)).toEqual({ state: 'del', ownerId: a.ownerId });
    });

    it('an expired lease renews as LAPSED and renew never re-acquires (9.6 #86)', async () => {
      const id = freshId('lapsed');
      expect(await a.claim(id)).toBe(true);
      await h.expire(id);
      expect(await a.renew(id)).toBe(RenewOutcome.LAPSED);
      expect(await a.owner(id)).toBeUndefined();
      expect(await a.renew(id)).toBe(RenewOutcome.LAPSED);
      expect(await b.claim(id)).toBe(true);
    });

    it('a never-claimed id renews as LAPSED (9.6 #86)', async () => {
      const id = freshId('never');
      expect(await a.renew(id)).toBe(RenewOutcome.LAPSED);
      expect(await a.owner(id)).toBeUndefined();
    });

    it('a lapsed lease is re-established by claim, then renews again (store flush recovery)', async () => {
      const id = freshId('reestablish');
      expect(await a.take(id)).toBe(true);
      await h.expire(id);
      expect(await a.renew(id)).toBe(RenewOutcome.LAPSED);
      expect(await a.claim(id)).toBe(true);
      expect(await a.renew(id)).toBe(RenewOutcome.RENEWED);
      expect(await b.claim(id)).toBe(false);
    });

    it('repeated renew within the TTL keeps peers out past the original TTL (9.6 #87)', async () => {
      const id = freshId('keepalive');
      const aShort = await h.open({ ownerId: a.ownerId, ttlSeconds: 1 });
      expect(await aShort.claim(id)).toBe(true);
      for (let i = 0; i < 2; i++) {
        await h.elapse(600);
        expect(await aShort.renew(id)).toBe(RenewOutcome.RENEWED);
        expect(await b.claim(id)).toBe(false);
      }
      // 1.2 s have passed against a 1 s TTL: only the renewals kept the lease.
      expect(await b.owner(id)).toEqual({ state: 'own', ownerId: a.ownerId });
    });

    it("release frees for a peer; a peer's release does not clear ours; releasing an unowned id is a no-op (9.6 #88)", async () => {
      const id = freshId('release');
      expect(await a.claim(id)).toBe(true);
      await b.release(id);
      expect(await a.owner(id)).toEqual({ state: 'own', ownerId: a.ownerId });
      expect(await b.claim(id)).toBe(false);
      await a.release(id);
      expect(await a.owner(id)).toBeUndefined();
      expect(await b.claim(id)).toBe(true);

      const unowned = freshId('release-none');
      await a.release(unowned);
      expect(await a.owner(unowned)).toBeUndefined();
    });

    it("a peer's release does not clear our del: marker", async () => {
      const id = freshId('release-del');
      expect(await a.claim(id, { forDestroy: true })).toBe(true);
      await b.release(id);
      expect(await b.take(id)).toBe(false);
      await a.release(id);
      expect(await b.take(id)).toBe(true);
    });

    it('owner of an unknown id is empty and does not take ownership (9.6 #89)', async () => {
      const id = freshId('peek');
      expect(await a.owner(id)).toBeUndefined();
      expect(await a.owner(id)).toBeUndefined();
      expect(await b.claim(id)).toBe(true);
      expect(await a.owner(id)).toEqual({ state: 'own', ownerId: b.ownerId });
    });

    it('a non-destroy claim over our own del: is refused and leaves del: intact; a destroy claim still refreshes (9.6 #95)', async () => {
      const id = freshId('no-downgrade');
      const aShort = await h.open({ ownerId: a.ownerId, ttlSeconds: SETUP_TTL_SECONDS });
      expect(await aShort.claim(id, { forDestroy: true })).toBe(true);
      expect(await a.claim(id)).toBe(false);
      expect(await a.owner(id)).toEqual({ state: 'del', ownerId: a.ownerId });
      expect(await a.renew(id)).toBe(RenewOutcome.LOST);
      expect(await b.take(id)).toBe(false);
      expect((await h.remainingTtlMs(id))!).toBeLessThanOrEqual(SETUP_TTL_SECONDS * 1000);
      expect(await a.claim(id, { forDestroy: true })).toBe(true);
      expect((await h.remainingTtlMs(id))!).toBeGreaterThan(SETUP_TTL_SECONDS * 1000);
    });

    it('eight concurrent claims of an absent lease produce exactly one winner (9.6 #96)', async () => {
      const id = freshId('race');
      const stores = await Promise.all(Array.from({ length: 8 }, () => h.open()));
      const results = await Promise.all(stores.map((s) => s.claim(id)));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = stores[results.indexOf(true)]!;
      expect(await a.owner(id)).toEqual({ state: 'own', ownerId: winner.ownerId });
    });

    it('eight concurrent destroy claims of a lease held by none produce exactly one winner', async () => {
      const id = freshId('race-destroy');
      const stores = await Promise.all(Array.from({ length: 8 }, () => h.open()));
      const results = await Promise.all(stores.map((s) => s.claim(id, { forDestroy: true })));
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it('a take racing a destroy claim on our lease: exactly one of them wins', async () => {
      for (let i = 0; i < 10; i++) {
        const id = freshId('take-vs-destroy');
        expect(await a.claim(id)).toBe(true);
        const [destroyed, taken] = await Promise.all([
          a.claim(id, { forDestroy: true }),
          b.take(id),
        ]);
        expect(destroyed !== taken).toBe(true);
        const holder = await a.owner(id);
        expect(holder).toEqual(
          destroyed ? { state: 'del', ownerId: a.ownerId } : { state: 'own', ownerId: b.ownerId },
        );
      }
    });

    it('rejects an empty sandbox id with InvalidArgumentError, writing nothing', async () => {
      for (const call of [
        () => a.take(''),
        () => a.claim(''),
        () => a.claim('', { forDestroy: true }),
        () => a.renew(''),
        () => a.release(''),
        () => a.owner(''),
      ]) {
        const err = await rejection(call());
        expect(isSbxError(err) && err.code).toBe('INVALID_ARGUMENT');
      }
    });

    it('close() is idempotent and later calls raise OwnershipBackendError', async () => {
      const c = await h.open();
      await c.close();
      await c.close();
      const err = await rejection(c.claim(freshId('closed')));
      expect(isSbxError(err) && err.code).toBe('OWNERSHIP_BACKEND');
    });

    it("closing one instance's store does not release its leases for peers", async () => {
      const id = freshId('close-keeps');
      const c = await h.open();
      expect(await c.claim(id)).toBe(true);
      await c.close();
      expect(await a.claim(id)).toBe(false);
      expect(await a.owner(id)).toEqual({ state: 'own', ownerId: c.ownerId });
    });
  });
}
