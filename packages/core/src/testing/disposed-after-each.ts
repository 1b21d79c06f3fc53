import { afterEach } from 'vitest';

/**
 * `make`, with everything it makes disposed after each test of the calling file or `describe`,
 * all at once. A test that fails half-way still stops its providers and fakes, so their timers and
 * processes never leak into the next test.
 */
export function disposedAfterEach<A extends unknown[], T extends { dispose(): Promise<void> }>(
  make: (...args: A) => T,
): (...args: A) => T {
  const live: T[] = [];
  afterEach(async () => {
    await Promise.all(live.splice(0).map((made) => made.dispose()));
  });
  return (...args) => {
    const made = make(...args);
    live.push(made);
    return made;
  };
}
