import { describe, expect, it } from 'vitest';
import { FileOperationLock } from './file-operation-lock.js';

describe('§5.12 file operation lock', () => {
  it('serializes one (sandbox, path) and drops the entry once nobody holds or waits', async () => {
    const lock = new FileOperationLock();
    const order: string[] = [];
    let releaseFirst!: () => void;
    const first = lock.runExclusive('sb', '/a', async () => {
      order.push('first start');
      await new Promise<void>((resolve) => (releaseFirst = resolve));
      order.push('first end');
    });
    const second = lock.runExclusive('sb', '/a', async () => {
      order.push('second');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['first start']);
    expect(lock.isLocked('sb', '/a')).toBe(true);
    expect(lock.size).toBe(1);
    releaseFirst();
    await Promise.all([first, second]);
    expect(order).toEqual(['first start', 'first end', 'second']);
    expect(lock.size).toBe(0);
  });

  it('different sandboxes or paths never contend', async () => {
    const lock = new FileOperationLock();
    let release!: () => void;
    const held = lock.runExclusive('sb1', '/a', () => new Promise<void>((r) => (release = r)));
    await new Promise((resolve) => setImmediate(resolve));
    await lock.runExclusive('sb2', '/a', async () => {});
    await lock.runExclusive('sb1', '/b', async () => {});
    release();
    await held;
  });

  it('does not grow with many distinct paths, also when the work fails (§10.9 #117)', async () => {
    const lock = new FileOperationLock();
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        lock
          .runExclusive('sb', `/f${i}`, async () => {
            if (i % 3 === 0) throw new Error('boom');
          })
          .catch(() => undefined),
      ),
    );
    expect(lock.size).toBe(0);
  });
});
