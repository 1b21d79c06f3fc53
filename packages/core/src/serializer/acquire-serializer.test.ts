import { describe, expect, it } from 'vitest';
import { AcquireSerializer, serializerKey } from './acquire-serializer.js';
import { AbortedError, SerializerClosedError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { Deferred, settle, track } from '../testing/deferred.js';

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

function recordingLogger(): Logger & { lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (msg: string) => void lines.push({ level, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

describe('serializerKey', () => {
  it('is unambiguous where joining with a separator is not', () => {
    expect(serializerKey('a:b', 'c')).not.toBe(serializerKey('a', 'b:c'));
    expect(serializerKey('u', 't')).toBe(serializerKey('u', 't'));
    expect(serializerKey(undefined, 't')).toBe(serializerKey(null, 't'));
    expect(serializerKey('1')).not.toBe(serializerKey(1));
  });
});

describe('AcquireSerializer', () => {
  it('S1 mutual exclusion: at most one holder per key at any instant', async () => {
    const s = new AcquireSerializer();
    let inside = 0;
    let maxInside = 0;
    const gates = Array.from({ length: 8 }, () => new Deferred());
    const runs = gates.map((gate) =>
      s.hold('k', async () => {
        inside += 1;
        maxInside = Math.max(maxInside, inside);
        await gate.promise;
        inside -= 1;
      }),
    );
    for (const gate of gates) {
      await settle();
      expect(inside).toBe(1);
      gate.resolve();
    }
    await Promise.all(runs);
    expect(maxInside).toBe(1);
    expect(s.size).toBe(0);
  });

  it('S1 waiters of one key are granted in arrival order (FIFO, no barging)', async () => {
    const s = new AcquireSerializer();
    const first = await s.acquire('k');
    const order: number[] = [];
    const waiters = [1, 2, 3].map((n) =>
      s.hold('k', () => {
        order.push(n);
      }),
    );
    first.release();
    // A newcomer arriving after the hand-off is queued behind the existing waiters.
    const late = s.hold('k', () => {
      order.push(4);
    });
    await Promise.all([...waiters, late]);
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it('S2 independence: holders of different keys proceed concurrently', async () => {
    const s = new AcquireSerializer();
    const aEntered = new Deferred();
    const bEntered = new Deferred();
    // Each body waits for the other one to have entered: only possible if both run at once.
    const a = s.hold('a', async () => {
      aEntered.resolve();
      await bEntered.promise;
    });
    const b = s.hold('b', async () => {
      bEntered.resolve();
      await aEntered.promise;
    });
    await Promise.all([a, b]);
    expect(s.size).toBe(0);
  });

  it('S3 table entry removed when refs reach zero', async () => {
    const s = new AcquireSerializer();
    await Promise.all(Array.from({ length: 50 }, (_, i) => s.hold(`key-${i}`, async () => {})));
    expect(s.size).toBe(0);

    const holder = await s.acquire('k');
    const w1 = s.acquire('k');
    const w2 = s.acquire('k');
    expect(s.refCount('k')).toBe(3);
    holder.release();
    const l1 = await w1;
    expect(s.refCount('k')).toBe(2);
    l1.release();
    const l2 = await w2;
    expect(s.refCount('k')).toBe(1);
    expect(s.size).toBe(1);
    l2.release();
    expect(s.refCount('k')).toBe(0);
    expect(s.size).toBe(0);
  });

  it('S4 hold releases and reclaims even if the body throws; a closed serializer refuses checkout', async () => {
    const s = new AcquireSerializer();
    const boom = new Error('boom');
    expect(await rejectionOf(s.hold('k', () => Promise.reject(boom)))).toBe(boom);
    expect(
      await rejectionOf(
        s.hold('k', () => {
          throw boom;
        }),
      ),
    ).toBe(boom);
    expect(s.size).toBe(0);
    expect(await s.hold('k', () => 'next')).toBe('next');

    s.close();
    const err = await rejectionOf(s.hold('k', () => 'never'));
    expect(err).toBeInstanceOf(SerializerClosedError);
    expect((err as Error).message).toBe('AcquireSerializer is closed');
    expect(s.size).toBe(0);
  });

  it('S5 (Node analogue: waits are promises, not pool threads) queued waiters never block the event loop', async () => {
    const s = new AcquireSerializer();
    const holder = await s.acquire('k');
    const waiters = Array.from({ length: 100 }, () => s.acquire('k'));
    // With 100 waiters parked, the loop still runs macrotasks (I/O, timers) freely.
    let ticked = false;
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        ticked = true;
        resolve();
      }),
    );
    expect(ticked).toBe(true);
    expect(s.refCount('k')).toBe(101);
    holder.release();
    for (const w of waiters) (await w).release();
    expect(s.size).toBe(0);
  });

  it('S6 (Node analogue: pool refuses after close) run() after close rejects with the closed error and the table still drains', async () => {
    const s = new AcquireSerializer();
    const lease = await s.acquire('k');
    s.close();
    const err = await rejectionOf(s.run(async () => 'io'));
    expect(err).toBeInstanceOf(SerializerClosedError);
    expect((err as Error).message).toBe('AcquireSerializer is closed');
    lease.release();
    expect(s.size).toBe(0);
    expect(s.running).toBe(0);
  });

  it('S7 a waiter aborted before the grant rejects at once and leaks nothing; a later holder succeeds', async () => {
    const s = new AcquireSerializer();
    const holder = await s.acquire('k');
    const controller = new AbortController();
    const waiting = track(s.hold('k', () => 'never ran', { signal: controller.signal }));
    await settle();
    expect(s.refCount('k')).toBe(2);
    controller.abort(new Error('caller left'));
    await settle();
    expect(waiting.status).toBe('rejected');
    expect(waiting.reason).toBeInstanceOf(AbortedError);
    expect((waiting.reason as AbortedError).cause).toEqual(new Error('caller left'));
    expect(s.refCount('k')).toBe(1);
    holder.release();
    expect(s.size).toBe(0);
    expect(await s.hold('k', () => 'later')).toBe('later');
    expect(s.size).toBe(0);
  });

  it('S7 an abort landing after the grant but before the body abandons the section and releases at once', async () => {
    const s = new AcquireSerializer();
    const holder = await s.acquire('k');
    const controller = new AbortController();
    let ran = false;
    const waiting = track(
      s.hold(
        'k',
        () => {
          ran = true;
        },
        { signal: controller.signal },
      ),
    );
    holder.release(); // grants the waiter synchronously...
    controller.abort(); // ...which is aborted before its continuation runs
    await settle();
    expect(waiting.reason).toBeInstanceOf(AbortedError);
    expect(ran).toBe(false);
    expect(s.size).toBe(0);
  });

  it('S7 an already-aborted signal is refused without touching the table', async () => {
    const s = new AcquireSerializer();
    const err = await rejectionOf(s.acquire('k', { signal: AbortSignal.abort() }));
    expect(err).toBeInstanceOf(AbortedError);
    expect(s.size).toBe(0);
  });

  it('S8 (Node analogue: cleanup owned by the abort event, not the cancelled task) the table drains synchronously inside abort()', async () => {
    const s = new AcquireSerializer();
    const holder = await s.acquire('k');
    const controller = new AbortController();
    const abandoned = s.acquire('k', { signal: controller.signal });
    abandoned.catch(() => {}); // the caller never resumes; nobody awaits this
    expect(s.refCount('k')).toBe(2);
    controller.abort();
    // Same synchronous turn: no microtask of the cancelled caller has had a chance to run.
    expect(s.refCount('k')).toBe(1);
    holder.release();
    expect(s.size).toBe(0);
  });

  it('S9 an abort inside the body releases the lock; the next holder does not hang', async () => {
    const s = new AcquireSerializer();
    const controller = new AbortController();
    const entered = new Deferred();
    const first = s.hold(
      'k',
      async () => {
        entered.resolve();
        await new Promise<void>((_resolve, reject) =>
          controller.signal.addEventListener('abort', () => reject(new AbortedError())),
        );
      },
      { signal: controller.signal },
    );
    await entered.promise;
    const next = s.hold('k', () => 'next ran');
    controller.abort();
    expect(await rejectionOf(first)).toBeInstanceOf(AbortedError);
    expect(await next).toBe('next ran');
    expect(s.size).toBe(0);
  });

  it('S10 exactly-once cleanup: grant/abort/close/release races check in once per checkout', async () => {
    const s = new AcquireSerializer();
    const holder = await s.acquire('k');

    // Granted, then aborted: the grant won; the caller owns a lease and the abort changes nothing.
    const c1 = new AbortController();
    const w1 = s.acquire('k', { signal: c1.signal });
    // Aborted, then close(): the abort won; close() must not check it in a second time.
    const c2 = new AbortController();
    const w2 = s.acquire('k', { signal: c2.signal });
    const w2State = track(w2);
    // Queued when close() runs, aborted afterwards: close won; the abort must do nothing.
    const c3 = new AbortController();
    const w3 = track(s.acquire('k', { signal: c3.signal }));
    expect(s.refCount('k')).toBe(4);

    holder.release(); // grants w1
    c1.abort();
    c2.abort();
    expect(s.refCount('k')).toBe(2); // w1 holding, w3 queued
    s.close();
    c3.abort();
    await settle();
    expect(w2State.reason).toBeInstanceOf(AbortedError);
    expect(w3.reason).toBeInstanceOf(SerializerClosedError);
    expect(s.refCount('k')).toBe(1);

    const lease1 = await w1;
    lease1.release();
    lease1.release(); // a repeated release is a no-op, not a second check-in
    holder.release();
    expect(s.refCount('k')).toBe(0);
    expect(s.size).toBe(0);
  });

  it('S10 a lease released twice hands the key on once: the second waiter still waits', async () => {
    const s = new AcquireSerializer();
    const holder = await s.acquire('k');
    const second = track(s.acquire('k'));
    const third = track(s.acquire('k'));
    holder.release();
    holder.release();
    await settle();
    expect(second.status).toBe('fulfilled');
    expect(third.settled).toBe(false);
    expect(s.refCount('k')).toBe(2);
    second.value?.release();
    const lease = await third.promise;
    lease.release();
    expect(s.size).toBe(0);
  });

  it('S11 close is idempotent; running sections finish and still reclaim; new holders are rejected', async () => {
    const s = new AcquireSerializer();
    const body = new Deferred<string>();
    const running = s.hold('k', () => body.promise);
    await settle();
    s.close();
    s.close();
    expect(s.closed).toBe(true);
    expect(await rejectionOf(s.hold('other', () => 1))).toBeInstanceOf(SerializerClosedError);
    expect(await rejectionOf(s.acquire('k'))).toBeInstanceOf(SerializerClosedError);
    expect(s.size).toBe(1);
    body.resolve('finished');
    expect(await running).toBe('finished');
    expect(s.size).toBe(0);
  });

  it('S12 queued waiters rejected by close get the closed error (not an abort) and are reclaimed', async () => {
    const s = new AcquireSerializer();
    const holder = await s.acquire('k');
    const controller = new AbortController();
    const byCaller = track(s.acquire('k', { signal: controller.signal }));
    const byClose = track(s.hold('k', () => 'never'));
    controller.abort();
    s.close();
    await settle();
    expect(byCaller.reason).toBeInstanceOf(AbortedError);
    expect(byClose.reason).toBeInstanceOf(SerializerClosedError);
    expect((byClose.reason as Error).message).toBe('AcquireSerializer is closed');
    expect(s.refCount('k')).toBe(1);
    holder.release();
    expect(s.size).toBe(0);
  });

  it('S14 run() bounds provider I/O at the limit; an abandoned job runs to completion and frees its slot', async () => {
    const logger = recordingLogger();
    const s = new AcquireSerializer({ limit: 2, logger });
    const gates = [new Deferred<string>(), new Deferred<string>(), new Deferred<string>()];
    let started = 0;
    const controller = new AbortController();
    const jobs = gates.map((gate, i) =>
      track(
        s.run(
          () => {
            started += 1;
            return gate.promise;
          },
          i === 0 ? { signal: controller.signal } : {},
        ),
      ),
    );
    await settle();
    expect(started).toBe(2);
    expect(s.running).toBe(2);
    expect(s.queued).toBe(1);

    controller.abort(); // the caller of job 0 leaves; job 0 keeps running and keeps its slot
    await settle();
    expect(jobs[0]?.reason).toBeInstanceOf(AbortedError);
    expect(s.running).toBe(2);
    expect(started).toBe(2);

    gates[0]?.reject(new Error('late failure'));
    await settle();
    expect(started).toBe(3); // slot freed only once the abandoned job finished
    expect(logger.lines.map((l) => l.msg)).toContain(
      'Abandoned serializer job failed after its caller left',
    );
    gates[1]?.resolve('one');
    gates[2]?.resolve('two');
    await settle();
    expect(jobs[1]?.value).toBe('one');
    expect(jobs[2]?.value).toBe('two');
    expect(s.running).toBe(0);
  });

  it('S14 a queued run() job aborted before it starts never runs; close() rejects queued jobs', async () => {
    const s = new AcquireSerializer({ limit: 1 });
    const gate = new Deferred();
    const first = s.run(() => gate.promise);
    const controller = new AbortController();
    let ran = 0;
    const aborted = track(s.run(() => void (ran += 1), { signal: controller.signal }));
    const closedOut = track(s.run(() => void (ran += 1)));
    controller.abort();
    await settle();
    expect(aborted.reason).toBeInstanceOf(AbortedError);
    s.close();
    await settle();
    expect(closedOut.reason).toBeInstanceOf(SerializerClosedError);
    gate.resolve();
    await first;
    expect(ran).toBe(0);
    expect(s.queued).toBe(0);
  });

  it('S14 a freed slot starts one queued job, not every queued job', async () => {
    const s = new AcquireSerializer({ limit: 1 });
    const gates = [new Deferred(), new Deferred(), new Deferred()];
    let started = 0;
    const jobs = gates.map((gate) =>
      s.run(() => {
        started += 1;
        return gate.promise;
      }),
    );
    await settle();
    expect([started, s.running, s.queued]).toEqual([1, 1, 2]);
    gates[0]?.resolve();
    await settle();
    expect([started, s.running, s.queued]).toEqual([2, 1, 1]);
    gates[1]?.resolve();
    gates[2]?.resolve();
    await Promise.all(jobs);
    expect(s.running).toBe(0);
  });

  it('S14 a queued job aborted before it starts leaves the queue at once and never runs when a slot frees', async () => {
    const s = new AcquireSerializer({ limit: 1 });
    const gate = new Deferred();
    const first = s.run(() => gate.promise);
    const controller = new AbortController();
    let ran = 0;
    const aborted = track(s.run(() => void (ran += 1), { signal: controller.signal }));
    controller.abort();
    expect(s.queued).toBe(0);
    gate.resolve();
    await first;
    await settle();
    expect(aborted.reason).toBeInstanceOf(AbortedError);
    expect(ran).toBe(0);
    expect(s.running).toBe(0);
  });

  it('S15 run() takes no key lock: provider I/O outside a held section is not serialized by the key', async () => {
    const s = new AcquireSerializer();
    const lease = await s.acquire('k');
    expect(await s.run(() => 'remote I/O while k is held')).toBe('remote I/O while k is held');
    lease.release();
    expect(s.size).toBe(0);
  });

  it('rejects a limit that is not a positive integer', () => {
    expect(() => new AcquireSerializer({ limit: 0 })).toThrow(/positive integer/);
  });
});
