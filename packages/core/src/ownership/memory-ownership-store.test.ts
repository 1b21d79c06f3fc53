import { describe, expect, it } from 'vitest';
import { MemoryLeaseTable, MemoryOwnershipStore } from './memory-ownership-store.js';
import { RenewOutcome } from './ownership-store.js';
import { describeOwnershipStoreContract } from '../testing/ownership-store-contract.js';

function manualClock(start = 1_000): { now(): number; advance(ms: number): void } {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

describeOwnershipStoreContract(
  'MemoryOwnershipStore',
  async () => {
    const clock = manualClock();
    const table = new MemoryLeaseTable({ clock });
    const stores: MemoryOwnershipStore[] = [];
    return {
      async open(options = {}) {
        const store = new MemoryOwnershipStore({
          table,
          ownerId: options.ownerId,
          ttlSeconds: options.ttlSeconds ?? 60,
        });
        stores.push(store);
        return store;
      },
      async expire(id) {
        table.expire(id);
      },
      async remainingTtlMs(id) {
        return table.remainingMs(id);
      },
      async elapse(ms) {
        clock.advance(ms);
      },
      async cleanup() {
        await Promise.all(stores.map((s) => s.close()));
        table.clear();
      },
    };
  },
  { supportsCrossProcess: false },
);

describe('MemoryOwnershipStore', () => {
  it('treats a lease as expired exactly when now >= expiresAt', async () => {
    const clock = manualClock();
    const store = new MemoryOwnershipStore({ clock, ttlSeconds: 1 });
    expect(await store.claim('s')).toBe(true);
    clock.advance(999);
    expect(await store.renew('s')).toBe(RenewOutcome.RENEWED);
    clock.advance(999);
    expect((await store.owner('s'))?.ownerId).toBe(store.ownerId);
    clock.advance(1);
    expect(await store.owner('s')).toBeUndefined();
    expect(store.table.size).toBe(0);
  });

  it('defaults to the 120 s lease TTL (30 s x 4)', async () => {
    const clock = manualClock();
    const store = new MemoryOwnershipStore({ clock });
    expect(store.ttlSeconds).toBe(120);
    await store.take('s');
    expect(store.table.remainingMs('s')).toBe(120_000);
  });

  it('a store that owns its table clears it on close; a shared table is left alone', async () => {
    const own = new MemoryOwnershipStore();
    await own.claim('s');
    await own.close();
    expect(own.table.size).toBe(0);

    const table = new MemoryLeaseTable();
    const a = new MemoryOwnershipStore({ table });
    const b = new MemoryOwnershipStore({ table });
    await a.claim('s');
    await a.close();
    expect(await b.owner('s')).toEqual({ state: 'own', ownerId: a.ownerId });
  });

  it('keeps the stored text in the lease value format', async () => {
    const store = new MemoryOwnershipStore({ ownerId: 'host:abc' });
    await store.claim('s', { forDestroy: true });
    expect(store.rawValue('s')).toBe('del:host:abc');
  });

  it('stores on separate tables do not see each other (single-instance only)', async () => {
    const a = new MemoryOwnershipStore();
    const b = new MemoryOwnershipStore();
    expect(await a.claim('s')).toBe(true);
    expect(await b.claim('s')).toBe(true);
  });

  it('refuses a clock next to a shared table, and invalid owner ids or TTLs', () => {
    expect(
      () => new MemoryOwnershipStore({ table: new MemoryLeaseTable(), clock: manualClock() }),
    ).toThrow(/MemoryLeaseTable/);
    expect(() => new MemoryOwnershipStore({ ownerId: '' })).toThrow(/owner id/);
    expect(() => new MemoryOwnershipStore({ ttlSeconds: 0 })).toThrow(/TTL/);
  });
});
