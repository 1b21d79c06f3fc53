import { describe, expect, it } from 'vitest';
import { disposedAfterEach } from './disposed-after-each.js';

class Resource {
  disposed = 0;
  constructor(readonly name: string) {}
  async dispose(): Promise<void> {
    this.disposed += 1;
  }
}

describe('disposedAfterEach', () => {
  const made: Resource[] = [];
  const resource = disposedAfterEach((name: string) => {
    const r = new Resource(name);
    made.push(r);
    return r;
  });

  it('hands out what the factory makes, with its arguments', () => {
    const a = resource('a');
    const b = resource('b');
    expect([a.name, b.name]).toEqual(['a', 'b']);
    expect(a.disposed + b.disposed).toBe(0);
  });

  it('disposed everything the previous test made, exactly once', () => {
    expect(made.map((r) => [r.name, r.disposed])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
  });

  it('and does not dispose again what an earlier test already got rid of', () => {
    expect(made.map((r) => r.disposed)).toEqual([1, 1]);
  });
});
