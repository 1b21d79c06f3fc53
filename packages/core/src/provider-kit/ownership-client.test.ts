import { describe, expect, it } from 'vitest';
import { MemoryLeaseTable, MemoryOwnershipStore } from '../ownership/memory-ownership-store.js';
import type { OwnershipStore } from '../ownership/ownership-store.js';
import { RenewOutcome } from '../ownership/ownership-store.js';
import type { SandboxProviderEvent } from '../contract/provider-events.js';
import { ManualClock } from '../testing/manual-clock.js';
import { recordingLogger } from '../testing/recording-logger.js';
import { controllable } from '../testing/deferred.js';
import { OwnershipClient } from './ownership-client.js';
import { describeLease } from '../ownership/lease-peek.js';

function peers() {
  const table = new MemoryLeaseTable();
  const a = new MemoryOwnershipStore({ ownerId: 'a', table });
  const b = new MemoryOwnershipStore({ ownerId: 'b', table });
  return { a, b };
}

/** A store whose every call fails, as Redis does when it is unreachable. */
function downStore(ownerId = 'a'): OwnershipStore {
  const fail = () => Promise.reject(new Error('store down'));
  return {
    ownerId,
    supportsCrossProcess: true,
    take: fail,
    claim: fail,
    renew: fail,
    release: fail,
    owner: fail,
    close: async () => {},
  };
}

function client(store: OwnershipStore) {
  const events: SandboxProviderEvent[] = [];
  const logger = recordingLogger();
  const c = new OwnershipClient({
    store,
    renewalIntervalMs: 10,
    emit: (e) => events.push(e),
    clock: new ManualClock(),
    logger,
  });
  return { c, events, logger };
}

describe('OwnershipClient', () => {
  it('publish takes the lease, holds it and moves the epoch on', async () => {
    const { a } = peers();
    const { c } = client(a);
    expect(c.epochOf('s1')).toBe(0);
    expect(await c.publish('s1')).toBe(true);
    const first = c.epochOf('s1');
    expect(first).toBeGreaterThan(0);
    expect(c.holds('s1')).toBe(true);
    expect(await c.publish('s1')).toBe(true);
    expect(c.epochOf('s1')).toBeGreaterThan(first);
  });

  it('the intent mark is counted: one publish ending does not clear a concurrent one', async () => {
    const gates = [controllable<boolean>(), controllable<boolean>()];
    let call = 0;
    const { a } = peers();
    const store: OwnershipStore = Object.assign(Object.create(a) as OwnershipStore, {
      take: () => gates[call++]!.promise,
    });
    const { c } = client(store);
    const p1 = c.publish('s1');
    const p2 = c.publish('s1');
    expect(c.hasIntent('s1')).toBe(true);
    gates[0]!.resolve(true);
    await p1;
    expect(c.hasIntent('s1')).toBe(true);
    gates[1]!.resolve(true);
    await p2;
    expect(c.hasIntent('s1')).toBe(false);
  });

  it('a publish refused by a teardown marker is false and leaves the epoch alone', async () => {
    const { a, b } = peers();
    await b.claim('s1', { forDestroy: true });
    const { c } = client(a);
    expect(await c.publish('s1')).toBe(false);
    expect(c.epochOf('s1')).toBe(0);
    expect(c.holds('s1')).toBe(false);
  });

  it('publish reports and throws a store error', async () => {
    const { c, events } = client(downStore());
    await expect(c.publish('s1')).rejects.toThrow('store down');
    expect(events).toMatchObject([{ type: 'ownership-error', operation: 'take', sandboxId: 's1' }]);
    expect(c.hasIntent('s1')).toBe(false);
  });

  it('claim is fail-closed: an unanswerable store reads as a peer, reported and logged', async () => {
    const { c, events, logger } = client(downStore());
    expect(await c.claim('s1', { forDestroy: true })).toBe(false);
    const outcome = await c.claimOutcome('s1', { forDestroy: false });
    expect(outcome.outcome).toBe('unknown');
    expect(events.map((e) => e.type)).toEqual(['ownership-error', 'ownership-error']);
    expect(logger.text('warn')).toContain("treating it as another instance's");
  });

  it("claim tells a peer's refusal from a grant", async () => {
    const { a, b } = peers();
    await b.take('s1');
    const { c } = client(a);
    expect(await c.claimOutcome('s1', { forDestroy: false })).toEqual({ outcome: 'refused' });
    expect(await c.claimOutcome('s2', { forDestroy: false })).toEqual({ outcome: 'claimed' });
    expect(c.heldIds()).toEqual(['s2']);
  });

  it('refresh is fail-open: a store outage keeps the sandbox, only LOST is false', async () => {
    expect(await client(downStore()).c.refresh('s1')).toBe(true);
    const { a, b } = peers();
    const { c } = client(a);
    await c.publish('s1');
    expect(await c.refresh('s1')).toBe(true);
    await b.take('s1');
    expect(await c.refresh('s1')).toBe(false);
  });

  it('refresh re-claims a lapsed lease (a flushed store), and is false when a peer took it meanwhile', async () => {
    const { a, b } = peers();
    const { c, logger } = client(a);
    expect(await a.renew('s1')).toBe(RenewOutcome.LAPSED);
    expect(await c.refresh('s1')).toBe(true);
    expect((await a.owner('s1'))?.ownerId).toBe('a');
    expect(logger.text('info')).toContain('Re-established the lapsed lease of sandbox s1');

    const racing: OwnershipStore = Object.assign(Object.create(a) as OwnershipStore, {
      renew: async () => {
        await b.take('s2');
        return RenewOutcome.LAPSED;
      },
      claim: (id: string) => a.claim(id),
    });
    expect(await client(racing).c.refresh('s2')).toBe(false);
  });

  it('a LOST renewal is final: the lease is not claimed back even if the peer has let it go since', async () => {
    const { a, b } = peers();
    const racing: OwnershipStore = Object.assign(Object.create(a) as OwnershipStore, {
      renew: async (id: string) => {
        // A peer took the lease, then tore the sandbox down and gave the lease up.
        await b.take(id);
        await b.release(id);
        return RenewOutcome.LOST;
      },
    });
    expect(await client(racing).c.refresh('s3')).toBe(false);
    expect(await a.owner('s3')).toBeUndefined();
  });

  it('peek and describeLease show the holder, absence and an unanswerable store', async () => {
    const { a, b } = peers();
    await b.take('own');
    await b.claim('del', { forDestroy: true });
    const { c } = client(a);
    expect(describeLease(await c.peek('own'))).toBe('owned by b');
    expect(describeLease(await c.peek('del'))).toBe('being destroyed by b');
    expect(describeLease(await c.peek('none'))).toBe('unowned');
    const down = client(downStore());
    expect(describeLease(await down.c.peek('x'))).toBe('owner unknown');
    expect(down.events).toMatchObject([{ operation: 'owner' }]);
    expect(await c.heldByPeer('own')).toBe(true);
    await c.publish('mine');
    expect(await c.heldByPeer('mine')).toBe(false);
    expect(await down.c.heldByPeer('x')).toBe(false);
  });

  it('a held teardown is visible while it runs and leaves the lease neither held nor marked', async () => {
    const { a, b } = peers();
    const { c } = client(a);
    await c.publish('s1');
    expect(await c.claim('s1', { forDestroy: true })).toBe(true);
    const gate = controllable<void>();
    const stopping = c.heldTeardown('s1', () => gate.promise);
    expect(c.isTearingDown('s1')).toBe(true);
    expect(await b.take('s1')).toBe(false);
    gate.resolve();
    await stopping;
    expect(c.isTearingDown('s1')).toBe(false);
    expect(c.holds('s1')).toBe(false);
    expect(await b.take('s1')).toBe(true);
  });

  it('two held teardowns of one id: the first to end leaves the other one marked', async () => {
    const { a } = peers();
    const { c } = client(a);
    await c.publish('s1');
    expect(await c.claim('s1', { forDestroy: true })).toBe(true);
    const first = controllable<void>();
    const second = controllable<void>();
    const one = c.heldTeardown('s1', () => first.promise);
    const two = c.heldTeardown('s1', () => second.promise);
    first.resolve();
    await one;
    expect(c.isTearingDown('s1')).toBe(true);
    second.resolve();
    await two;
    expect(c.isTearingDown('s1')).toBe(false);
  });

  it('release gives the lease up, and a failing release is logged, not thrown', async () => {
    const { a, b } = peers();
    const { c } = client(a);
    await c.publish('s1');
    await c.release('s1');
    expect(c.holds('s1')).toBe(false);
    expect(await b.take('s1')).toBe(true);
    const down = client(downStore());
    await down.c.release('s1');
    expect(down.logger.text('warn')).toContain('Could not release the lease of sandbox s1');
  });

  it('holdIntent spans an adoption; its end is idempotent and counted with publishes', async () => {
    const { a } = peers();
    const { c } = client(a);
    const end = c.holdIntent('s1');
    const other = c.holdIntent('s1');
    await c.publish('s1');
    expect(c.hasIntent('s1')).toBe(true);
    end();
    end();
    // Ending one mark twice counts once: the other adoption's mark still stands.
    expect(c.hasIntent('s1')).toBe(true);
    other();
    expect(c.hasIntent('s1')).toBe(false);
  });
});
