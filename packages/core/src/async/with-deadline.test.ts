import { describe, expect, it } from 'vitest';
import { AbortedError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { Deferred, settle, track } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import { withDeadline } from './with-deadline.js';

function debugLines(): Logger & { lines: { msg: string; fields?: Record<string, unknown> }[] } {
  const lines: { msg: string; fields?: Record<string, unknown> }[] = [];
  const none = (): void => {};
  return {
    lines,
    debug: (msg, fields) => {
      lines.push({ msg, ...(fields ? { fields } : {}) });
    },
    info: none,
    warn: none,
    error: none,
  };
}

describe('withDeadline', () => {
  it('gives the value of work that settles in time and clears its timer', async () => {
    const clock = new ManualClock();
    const work = new Deferred<string>();
    const waiting = withDeadline(work.promise, { clock, ms: 1000 });
    expect(clock.pendingTimers).toBe(1);
    work.resolve('done');
    await expect(waiting).resolves.toEqual({ timedOut: false, value: 'done' });
    expect(clock.pendingTimers).toBe(0);
  });

  it('passes on the failure of work that fails in time', async () => {
    const clock = new ManualClock();
    const work = new Deferred<string>();
    const waiting = withDeadline(work.promise, { clock, ms: 1000 });
    work.reject(new Error('boom'));
    await expect(waiting).rejects.toThrow('boom');
    expect(clock.pendingTimers).toBe(0);
  });

  it('stops waiting at the deadline, aborts the controller and keeps nothing pending', async () => {
    const clock = new ManualClock();
    const work = new Deferred<string>();
    const controller = new AbortController();
    const waiting = track(withDeadline(work.promise, { clock, ms: 500, controller }));
    await clock.advance(499);
    await settle();
    expect(waiting.settled).toBe(false);
    expect(controller.signal.aborted).toBe(false);
    await clock.advance(1);
    await expect(waiting.promise).resolves.toEqual({ timedOut: true });
    expect(controller.signal.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    // Settling late changes nothing for the caller.
    work.resolve('late');
    await settle();
    await expect(waiting.promise).resolves.toEqual({ timedOut: true });
  });

  it('logs (not rejects unhandled) a failure of work abandoned at the deadline', async () => {
    const clock = new ManualClock();
    const logger = debugLines();
    const work = new Deferred<string>();
    const waiting = withDeadline(work.promise, { clock, ms: 10, logger, label: 'exec' });
    await clock.advance(10);
    await expect(waiting).resolves.toEqual({ timedOut: true });
    const error = new Error('vm gone');
    work.reject(error);
    await settle();
    expect(logger.lines).toEqual([
      {
        msg: 'Abandoned sandbox call failed after its caller stopped waiting',
        fields: { call: 'exec', error },
      },
    ]);
  });

  it('without ms waits as long as the work takes and sets no timer', async () => {
    const clock = new ManualClock();
    const work = new Deferred<number>();
    const waiting = track(withDeadline(work.promise, { clock, ms: undefined }));
    expect(clock.pendingTimers).toBe(0);
    await settle();
    expect(waiting.settled).toBe(false);
    work.resolve(7);
    await expect(waiting.promise).resolves.toEqual({ timedOut: false, value: 7 });
  });

  it('rejects with AbortedError when the signal fires first, and aborts the controller', async () => {
    const clock = new ManualClock();
    const work = new Deferred<string>();
    const caller = new AbortController();
    const controller = new AbortController();
    const waiting = withDeadline(work.promise, {
      clock,
      ms: 1000,
      signal: caller.signal,
      controller,
    });
    caller.abort(new Error('user cancelled'));
    await expect(waiting).rejects.toBeInstanceOf(AbortedError);
    expect(controller.signal.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    // The abandoned work may fail later without an unhandled rejection.
    work.reject(new Error('cancelled too'));
    await settle();
  });

  it('rejects at once for a signal that is already aborted', async () => {
    const clock = new ManualClock();
    const work = new Deferred<string>();
    const controller = new AbortController();
    const reason = new Error('before start');
    const error = await withDeadline(work.promise, {
      clock,
      ms: 1000,
      signal: AbortSignal.abort(reason),
      controller,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortedError);
    expect((error as AbortedError).cause).toBe(reason);
    expect(controller.signal.reason).toBe(reason);
    expect(clock.pendingTimers).toBe(0);
    work.reject(new Error('ignored'));
    await settle();
  });

  it('the first of work, deadline and signal wins; later ones change nothing', async () => {
    const clock = new ManualClock();
    const work = new Deferred<string>();
    const caller = new AbortController();
    const waiting = withDeadline(work.promise, { clock, ms: 100, signal: caller.signal });
    work.resolve('first');
    await expect(waiting).resolves.toEqual({ timedOut: false, value: 'first' });
    caller.abort();
    await clock.advance(100);
    await expect(waiting).resolves.toEqual({ timedOut: false, value: 'first' });
  });
});
