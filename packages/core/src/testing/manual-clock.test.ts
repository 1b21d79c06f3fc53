import { describe, expect, it } from 'vitest';
import { ManualClock } from './manual-clock.js';

describe('ManualClock', () => {
  it('fires due timers in due order with now() at each due time', async () => {
    const clock = new ManualClock(1_000);
    const seen: [string, number][] = [];
    clock.setTimeout(() => void seen.push(['c', clock.now()]), 300);
    clock.setTimeout(() => void seen.push(['a', clock.now()]), 100);
    clock.setTimeout(() => void seen.push(['b', clock.now()]), 100);
    clock.setTimeout(() => void seen.push(['late', clock.now()]), 5_000);
    await clock.advance(300);
    expect(seen).toEqual([
      ['a', 1_100],
      ['b', 1_100],
      ['c', 1_300],
    ]);
    expect(clock.now()).toBe(1_300);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextDueAt()).toBe(6_000);
  });

  it('fires timers scheduled by a callback within the same advance when they fall due', async () => {
    const clock = new ManualClock();
    const at: number[] = [];
    const tick = (): void => {
      at.push(clock.now());
      clock.setTimeout(tick, 60);
    };
    clock.setTimeout(tick, 60);
    await clock.advance(200);
    expect(at).toEqual([60, 120, 180]);
    expect(clock.now()).toBe(200);
  });

  it('awaits a callback’s promise before firing the next timer', async () => {
    const clock = new ManualClock();
    const order: string[] = [];
    clock.setTimeout(async () => {
      await Promise.resolve();
      await new Promise<void>((resolve) => setImmediate(resolve));
      order.push('first done');
    }, 10);
    clock.setTimeout(() => void order.push('second'), 10);
    await clock.advance(10);
    expect(order).toEqual(['first done', 'second']);
  });

  it('clearTimeout cancels, runDue fires what is already due, and time never goes back', async () => {
    const clock = new ManualClock();
    let fired = 0;
    const t = clock.setTimeout(() => void (fired += 1), 10);
    clock.clearTimeout(t);
    clock.setTimeout(() => void (fired += 100), 0);
    await clock.runDue();
    await clock.advance(50);
    expect(fired).toBe(100);
    await expect(clock.advance(-1)).rejects.toThrow(RangeError);
    await expect(clock.advanceTo(10)).rejects.toThrow(RangeError);
  });

  it('counts timers that asked to keep the process alive', () => {
    const clock = new ManualClock();
    clock.setTimeout(() => {}, 1);
    clock.setTimeout(() => {}, 1, { ref: true });
    expect(clock.refTimers).toBe(1);
  });
});
