import { describe, expect, it } from 'vitest';
import { OutputRing } from './output-ring.js';
import { RetainedOutput } from './retained-output.js';

describe('RetainedOutput', () => {
  it('frees the oldest ended output first once the total passes the limit', () => {
    const budget = new RetainedOutput(10);
    const rings = [0, 1, 2].map(() => {
      const ring = new OutputRing(100);
      ring.append('stdout', 'xxxxx');
      return ring;
    });
    for (const ring of rings) budget.keep(ring);
    expect(budget.retainedBytes).toBe(10);
    expect(rings.map((r) => r.keptBytes)).toEqual([0, 5, 5]);
  });

  it('counts an output kept twice once, and forgets a dropped one', () => {
    const budget = new RetainedOutput(100);
    const ring = new OutputRing(100);
    ring.append('stdout', 'abc');
    budget.keep(ring);
    budget.keep(ring);
    expect(budget.retainedBytes).toBe(3);
    budget.drop(ring);
    expect(budget.retainedBytes).toBe(0);
    expect(ring.keptBytes).toBe(3);
  });
});
