import { Deferred, settle } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { KeyedLock } from './keyed-lock.js';

describe('KeyedLock', () => {
  it('runs sections of one key one at a time, in arrival order, and forgets idle keys', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const gate = new Deferred();
    const first = lock.run('k', async () => {
      order.push('first:start');
      await gate.promise;
      order.push('first:end');
    });
    const second = lock.run('k', async () => {
      order.push('second');
    });
    const other = lock.run('other', async () => {
      order.push('other');
    });
    await settle();
    expect(order).toEqual(['first:start', 'other']);
    gate.resolve();
    await Promise.all([first, second, other]);
    expect(order).toEqual(['first:start', 'other', 'first:end', 'second']);
    expect(lock.size).toBe(0);
  });

  it('a failing section releases the key', async () => {
    const lock = new KeyedLock();
    await expect(lock.run('k', async () => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );
    expect(await lock.run('k', async () => 'next')).toBe('next');
    expect(lock.size).toBe(0);
  });
});
