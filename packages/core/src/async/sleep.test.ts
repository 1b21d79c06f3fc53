import { describe, expect, it } from 'vitest';
import { AbortedError } from '../errors/errors.js';
import { sleep } from './sleep.js';
import { track } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';

describe('sleep', () => {
  it('resolves once the clock reaches the deadline, not before', async () => {
    const clock = new ManualClock(0);
    const wait = track(sleep(1_000, { clock }));
    await clock.advance(999);
    expect(wait.settled).toBe(false);
    await clock.advance(1);
    await wait.promise;
    expect(clock.pendingTimers).toBe(0);
  });

  it('arms a ref’d timer: an awaited wait keeps a one-shot process alive', () => {
    const clock = new ManualClock(0);
    void sleep(5_000, { clock });
    expect(clock.refTimers).toBe(1);
  });

  it('an abort rejects with AbortedError carrying the reason and clears the timer', async () => {
    const clock = new ManualClock(0);
    const controller = new AbortController();
    const wait = sleep(60_000, { clock, signal: controller.signal, abortMessage: 'gave up' });
    controller.abort(new Error('user pressed ^C'));
    const err = await wait.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AbortedError);
    expect((err as Error).message).toBe('gave up');
    expect(((err as Error).cause as Error).message).toBe('user pressed ^C');
    expect(clock.pendingTimers).toBe(0);
  });

  it('an already aborted signal rejects without arming a timer', async () => {
    const clock = new ManualClock(0);
    await expect(sleep(10, { clock, signal: AbortSignal.abort() })).rejects.toBeInstanceOf(
      AbortedError,
    );
    expect(clock.pendingTimers).toBe(0);
  });
});
