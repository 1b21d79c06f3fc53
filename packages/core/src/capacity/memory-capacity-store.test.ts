import { describe, expect, it } from 'vitest';
import { CapacityReserveOutcome } from './capacity-store.js';
import { MemoryCapacityLedger, MemoryCapacityStore } from './memory-capacity-store.js';
import { describeCapacityStoreContract } from '../testing/capacity-store-contract.js';

function manualClock(start: number): { now(): number; advance(ms: number): void } {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

describeCapacityStoreContract('MemoryCapacityStore', async () => {
  const ledger = new MemoryCapacityLedger();
  const stores: MemoryCapacityStore[] = [];
  return {
    async open(hardLimit) {
      const store = new MemoryCapacityStore({ hardLimit, ledger });
      stores.push(store);
      return store;
    },
    async fields() {
      return ledger.snapshot();
    },
    async wipe() {
      ledger.clear();
    },
    async cleanup() {
      await Promise.all(stores.map((s) => s.close()));
      ledger.clear();
    },
  };
});

describe('MemoryCapacityStore grace and ageing (manual clock)', () => {
  async function readyStore(hardLimit: number) {
    const clock = manualClock(1_700_000_000_000);
    const ledger = new MemoryCapacityLedger({ clock });
    const store = new MemoryCapacityStore({ hardLimit, ledger });
    await store.reconcile({ expectedRevision: 0, entries: [], complete: true, maxAgeMs: 0 });
    return { clock, ledger, store };
  }

  it('an omitted VM keeps its slot for exactly maxAgeMs after it was first marked missing', async () => {
    const { clock, ledger, store } = await readyStore(1);
    await store.track('vm');
    const omit = async () =>
      store.reconcile({
        expectedRevision: await store.revision(),
        entries: [],
        complete: true,
        maxAgeMs: 5_000,
      });
    await omit();
    expect(ledger.fields.get('s:vm')).toBe(`m:${clock.now()}`);
    clock.advance(4_999);
    await omit();
    expect(ledger.fields.has('s:vm')).toBe(true);
    expect(await store.reserve('t')).toBe(CapacityReserveOutcome.FULL);
    clock.advance(1);
    await omit();
    expect(ledger.fields.has('s:vm')).toBe(false);
    expect(await store.reserve('t')).toBe(CapacityReserveOutcome.GRANTED);
  });

  it('an abandoned reservation is dropped by a complete inventory once older than maxAgeMs', async () => {
    const { clock, ledger, store } = await readyStore(2);
    await store.reserve('tok');
    expect(ledger.fields.get('r:tok')).toBe(String(clock.now()));
    const sweep = async () =>
      store.reconcile({
        expectedRevision: await store.revision(),
        entries: [],
        complete: true,
        maxAgeMs: 10_000,
      });
    clock.advance(9_999);
    await sweep();
    expect(ledger.fields.has('r:tok')).toBe(true);
    clock.advance(1);
    await sweep();
    expect(ledger.fields.has('r:tok')).toBe(false);
  });

  it('an unparsable missing marker is re-marked rather than kept forever', async () => {
    const { clock, ledger, store } = await readyStore(2);
    ledger.fields.set('s:vm', 'm:garbage');
    await store.reconcile({
      expectedRevision: await store.revision(),
      entries: [],
      complete: true,
      maxAgeMs: 1,
    });
    expect(ledger.fields.get('s:vm')).toBe(`m:${clock.now()}`);
  });

  it('a track that counts a new VM bumps the revision: an inventory listed before it is stale', async () => {
    const { ledger, store } = await readyStore(2);
    const listedAt = await store.revision();
    await store.track('vm-new');
    expect(
      await store.reconcile({
        expectedRevision: listedAt,
        entries: [],
        complete: true,
        maxAgeMs: 0,
      }),
    ).toBe(false);
    expect(ledger.fields.get('s:vm-new')).toBe('1');
  });

  it('rejects a hard limit below 1 or not an integer', () => {
    expect(() => new MemoryCapacityStore({ hardLimit: 0 })).toThrow(/hardLimit/);
    expect(() => new MemoryCapacityStore({ hardLimit: 1.5 })).toThrow(/hardLimit/);
  });
});
