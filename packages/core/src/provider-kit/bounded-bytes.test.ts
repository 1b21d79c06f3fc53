import { describe, expect, it } from 'vitest';
import { rejectionOf } from '../testing/rejection.js';
import { collectBoundedBytes } from './bounded-bytes.js';

/** A stream of `count` chunks of `size` bytes that records how far it was read and if closed. */
function source(count: number, size: number, failAt?: number) {
  const seen = { pulled: 0, closed: false };
  const stream: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        if (failAt !== undefined && seen.pulled === failAt) throw new Error('reset');
        if (seen.pulled >= count) return { done: true, value: undefined };
        seen.pulled += 1;
        return { done: false, value: new Uint8Array(size).fill(seen.pulled) };
      },
      return: async () => {
        seen.closed = true;
        return { done: true, value: undefined };
      },
    }),
  };
  return { stream, seen };
}

describe('collectBoundedBytes', () => {
  it('joins what arrives, byte-exact, up to the limit', async () => {
    const { stream } = source(3, 2);
    const bytes = await collectBoundedBytes(stream, { limit: 6, tooLarge: () => new Error('big') });
    expect([...bytes]).toEqual([1, 1, 2, 2, 3, 3]);
  });

  it('stops at the chunk that crosses the limit and closes the stream', async () => {
    const { stream, seen } = source(1_000, 1024);
    const error = await rejectionOf(
      collectBoundedBytes(stream, { limit: 4 * 1024, tooLarge: () => new Error('big') }),
    );
    expect(error).toMatchObject({ message: 'big' });
    expect(seen.pulled).toBe(5);
    expect(seen.closed).toBe(true);
  });

  it('closes a stream that failed midway and keeps the stream’s error', async () => {
    const { stream, seen } = source(10, 1, 3);
    const error = await rejectionOf(
      collectBoundedBytes(stream, { limit: 100, tooLarge: () => new Error('big') }),
    );
    expect(error).toMatchObject({ message: 'reset' });
    expect(seen.closed).toBe(true);
  });
});
