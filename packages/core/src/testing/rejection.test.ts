import { describe, expect, it } from 'vitest';
import { rejectionOf } from './rejection.js';

describe('rejectionOf', () => {
  it('returns the rejection reason as it is, non-Error reasons included', async () => {
    const error = new TypeError('bad');
    expect(await rejectionOf(Promise.reject(error))).toBe(error);
    expect(await rejectionOf(Promise.reject('plain'))).toBe('plain');
  });

  it('fails when the promise resolves', async () => {
    await expect(rejectionOf(Promise.resolve(1))).rejects.toThrow('expected a rejection');
  });
});
