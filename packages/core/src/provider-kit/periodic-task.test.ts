import { describe, expect, it } from 'vitest';
import { ManualClock } from '../testing/manual-clock.js';
import { recordingLogger } from '../testing/recording-logger.js';
import { controllable, settle } from '../testing/deferred.js';
import { PeriodicTask } from './periodic-task.js';

describe('PeriodicTask', () => {
  it('runs once per interval after start, the next pass counted from the end of the last', async () => {
    const clock = new ManualClock();
    let passes = 0;
    const task = new PeriodicTask({
      name: 't',
      intervalMs: 100,
      clock,
      run: async () => {
        passes += 1;
      },
    });
    task.start();
    task.start();
    await clock.advance(99);
    expect(passes).toBe(0);
    await clock.advance(1);
    expect(passes).toBe(1);
    await clock.advance(100);
    expect(passes).toBe(2);
    await task.stop();
    task.start();
    await clock.advance(1000);
    expect(passes).toBe(2);
    expect(clock.pendingTimers).toBe(0);
    expect(task.running).toBe(false);
  });

  it('runNow during a pass joins it instead of starting a second one', async () => {
    const gate = controllable<void>();
    let passes = 0;
    const task = new PeriodicTask({
      name: 't',
      intervalMs: 100,
      clock: new ManualClock(),
      run: async () => {
        passes += 1;
        await gate.promise;
      },
    });
    const first = task.runNow();
    const second = task.runNow();
    expect(second).toBe(first);
    gate.resolve();
    await Promise.all([first, second]);
    expect(passes).toBe(1);
  });

  it('a pass that ends after stop() schedules nothing, and stop() waits for it', async () => {
    const clock = new ManualClock();
    const gate = controllable<void>();
    let passes = 0;
    const task = new PeriodicTask({
      name: 't',
      intervalMs: 100,
      clock,
      run: async () => {
        passes += 1;
        await gate.promise;
      },
    });
    task.start();
    const advancing = clock.advance(100);
    await settle();
    expect(passes).toBe(1);
    let stopped = false;
    const stopping = task.stop().then(() => {
      stopped = true;
    });
    await settle();
    expect(stopped).toBe(false);
    gate.resolve();
    await Promise.all([advancing, stopping]);
    expect(task.running).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(1000);
    expect(passes).toBe(1);
    await task.runNow();
    expect(passes).toBe(1);
  });

  it('a failing pass is logged and the schedule goes on', async () => {
    const clock = new ManualClock();
    const logger = recordingLogger();
    let passes = 0;
    const task = new PeriodicTask({
      name: 'lease renewal',
      intervalMs: 10,
      clock,
      logger,
      run: async () => {
        passes += 1;
        throw new Error('store down');
      },
    });
    task.start();
    await clock.advance(30);
    expect(passes).toBe(3);
    expect(logger.text('error')).toContain('lease renewal pass failed');
    await task.stop();
  });

  it('refuses a non-positive interval', () => {
    expect(() => new PeriodicTask({ name: 't', intervalMs: 0, run: async () => {} })).toThrow(
      /intervalMs/,
    );
  });
});
