import { describe, expect, it } from 'vitest';
import { AbortedError, ProviderClosedError, SerializerClosedError } from '../errors/errors.js';
import { ResettableAcquireSerializer } from './resettable-acquire-serializer.js';
import { Deferred, settle, track } from '../testing/deferred.js';
import { rejectionOf } from '../testing/rejection.js';

function serializer(): ResettableAcquireSerializer {
  return new ResettableAcquireSerializer({
    name: 'test-acquire',
    closedError: (cause) => new ProviderClosedError('test provider has been shut down', { cause }),
  });
}

describe('ResettableAcquireSerializer', () => {
  it('runs one section per key at a time, in arrival order; other keys do not wait', async () => {
    const s = serializer();
    const gate = new Deferred();
    const order: string[] = [];
    const first = s.hold('k', async () => {
      order.push('first');
      await gate.promise;
      return 1;
    });
    const second = track(s.hold('k', () => order.push('second')));
    expect(await s.hold('other', () => 'free')).toBe('free');
    await settle();
    expect(second.settled).toBe(false);
    gate.resolve();
    expect(await first).toBe(1);
    await second.promise;
    expect(order).toEqual(['first', 'second']);
  });

  it('reset: a caller queued on the old table runs on the new one without waiting for the section still running', async () => {
    const s = serializer();
    const stuck = new Deferred();
    const running = track(s.hold('k', () => stuck.promise));
    const queued = track(s.hold('k', () => 'ran after reset'));
    await settle();
    expect(queued.settled).toBe(false);

    s.reset();
    expect(await queued.promise).toBe('ran after reset');
    expect(running.settled).toBe(false);
    stuck.resolve();
    await running.promise;
    expect(running.status).toBe('fulfilled');
  });

  it('close: queued and later callers get the owner’s closed error, caused by the table’s', async () => {
    const s = serializer();
    const gate = new Deferred();
    const running = s.hold('k', () => gate.promise);
    const queued = rejectionOf(s.hold('k', () => 'never'));
    await settle();
    s.close();
    expect(s.closed).toBe(true);

    const err = await queued;
    expect(err).toBeInstanceOf(ProviderClosedError);
    expect((err as Error).message).toBe('test provider has been shut down');
    expect((err as Error).cause).toBeInstanceOf(SerializerClosedError);
    expect(await rejectionOf(s.hold('k', () => 'never'))).toBeInstanceOf(ProviderClosedError);
    // The section that was already running is left to finish.
    gate.resolve();
    await running;
  });

  it('reset after close changes nothing: the owner stays shut', async () => {
    const s = serializer();
    s.close();
    s.reset();
    expect(s.closed).toBe(true);
    expect(await rejectionOf(s.hold('k', () => 'never'))).toBeInstanceOf(ProviderClosedError);
  });

  it('a caller queued on a table a reset closed gets the closed error if shutdown follows before it queues again', async () => {
    const s = serializer();
    const gate = new Deferred();
    const running = s.hold('k', () => gate.promise);
    const queued = rejectionOf(s.hold('k', () => 'never'));
    await settle();
    s.reset();
    s.close();
    expect(await queued).toBeInstanceOf(ProviderClosedError);
    gate.resolve();
    await running;
  });

  it('errors of the section pass through unchanged, a SerializerClosedError of its own included', async () => {
    const s = serializer();
    const boom = new Error('boom');
    expect(await rejectionOf(s.hold('k', () => Promise.reject(boom)))).toBe(boom);
    const own = new SerializerClosedError();
    expect(await rejectionOf(s.hold('k', () => Promise.reject(own)))).toBe(own);
  });

  it('an abort while queued rejects with AbortedError and leaves the key usable', async () => {
    const s = serializer();
    const gate = new Deferred();
    const running = s.hold('k', () => gate.promise);
    const controller = new AbortController();
    const queued = rejectionOf(s.hold('k', () => 'never', { signal: controller.signal }));
    await settle();
    controller.abort();
    expect(await queued).toBeInstanceOf(AbortedError);
    gate.resolve();
    await running;
    expect(await s.hold('k', () => 'again')).toBe('again');
  });
});

describe('ResettableAcquireSerializer: a running section is never run twice', () => {
  it('a section that itself throws SerializerClosedError after a reset fails once, not twice', async () => {
    const serializer = new ResettableAcquireSerializer({
      name: 'test',
      closedError: (cause) => new Error('closed', { cause }),
    });
    let runs = 0;
    const outcome = serializer.hold('k', async () => {
      // Reset only on the first run, so a regression (a second run) fails instead of looping.
      if (++runs === 1) serializer.reset();
      throw new SerializerClosedError();
    });
    await expect(outcome).rejects.toBeInstanceOf(SerializerClosedError);
    expect(runs).toBe(1);
  });
});
