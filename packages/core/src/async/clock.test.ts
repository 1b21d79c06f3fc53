import { describe, expect, it } from 'vitest';
import { systemClock } from './clock.js';

describe('systemClock', () => {
  it('does not keep the process alive unless asked to', () => {
    const background = systemClock.setTimeout(() => {}, 60_000);
    const kept = systemClock.setTimeout(() => {}, 60_000, { ref: true });
    const handleOf = (t: unknown) => (t as { handle: { hasRef(): boolean } }).handle;
    try {
      expect(handleOf(background).hasRef()).toBe(false);
      expect(handleOf(kept).hasRef()).toBe(true);
    } finally {
      systemClock.clearTimeout(background);
      systemClock.clearTimeout(kept);
    }
  });

  it('fires and can be cleared', async () => {
    let fired = 0;
    const cleared = systemClock.setTimeout(() => void (fired += 10), 0);
    systemClock.clearTimeout(cleared);
    await new Promise<void>((resolve) => systemClock.setTimeout(() => resolve(), 0));
    expect(fired).toBe(0);
    expect(Math.abs(systemClock.now() - Date.now())).toBeLessThan(1000);
  });
});
