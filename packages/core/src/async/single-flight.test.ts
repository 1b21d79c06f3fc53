import { describe, expect, it } from 'vitest';
import { controllable } from '../testing/deferred.js';
import { SingleFlight } from './single-flight.js';

describe('SingleFlight', () => {
  it('shares the run in flight and starts afresh once it settled, failed or not', async () => {
    const flight = new SingleFlight<number>();
    const gate = controllable<number>();
    let starts = 0;
    const start = () => {
      starts += 1;
      return gate.promise;
    };
    const a = flight.run(start);
    const b = flight.run(start);
    expect(starts).toBe(1);
    expect(flight.current).toBe(a);
    gate.resolve(7);
    expect(await a).toBe(7);
    expect(await b).toBe(7);
    expect(flight.current).toBeUndefined();
    await expect(flight.run(() => Promise.reject(new Error('x')))).rejects.toThrow('x');
    expect(await flight.run(async () => 8)).toBe(8);
  });
});
