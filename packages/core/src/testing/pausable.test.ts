import { describe, expect, it } from 'vitest';
import { Deferred, controllable, settle, track } from './deferred.js';
import { CallGate, pausable } from './pausable.js';

class Store {
  #items = new Map<string, string>();
  log: string[] = [];
  async put(key: string, value: string): Promise<void> {
    this.log.push(`put ${key}`);
    this.#items.set(key, value);
  }
  async take(key: string): Promise<string | undefined> {
    this.log.push(`take ${key}`);
    const v = this.#items.get(key);
    this.#items.delete(key);
    return v;
  }
  async explode(): Promise<never> {
    this.log.push('explode');
    throw new Error('kaboom');
  }
  size(): number {
    return this.#items.size;
  }
}

describe('pausable', () => {
  it('holds a paused call before the real method runs, then lets it go', async () => {
    const store = new Store();
    const p = pausable(store);
    await p.proxy.put('a', '1');
    p.pause('take');
    const taking = track(p.proxy.take('a'));
    const call = await p.nextCall('take');
    expect(call.args).toEqual(['a']);
    expect(call.phase).toBe('before');
    await settle();
    expect(store.log).toEqual(['put a']); // the real take has not run
    expect(taking.settled).toBe(false);
    const outcome = await call.release();
    expect(outcome).toEqual({ status: 'fulfilled', value: '1' });
    expect(await taking.promise).toBe('1');
    expect(call.done).toBe(true);
  });

  it('runs the real method first in the after phase and holds its outcome', async () => {
    const store = new Store();
    const p = pausable(store);
    p.pause('explode', { phase: 'after' });
    const exploding = track(p.proxy.explode());
    const call = await p.nextCall('explode');
    expect(store.log).toEqual(['explode']);
    expect(call.outcome?.status).toBe('rejected');
    await settle();
    expect(exploding.settled).toBe(false);
    await call.release();
    await settle();
    expect((exploding.reason as Error).message).toBe('kaboom');
  });

  it('fail() ends a held call with an error without running the real method', async () => {
    const store = new Store();
    const p = pausable(store);
    p.pause('put');
    const putting = track(p.proxy.put('a', '1'));
    (await p.nextCall('put')).fail(new Error('refused'));
    await settle();
    expect((putting.reason as Error).message).toBe('refused');
    expect(store.log).toEqual([]);
    expect(store.size()).toBe(0);
  });

  it('pauses only the next N calls with times, and hands calls out in arrival order', async () => {
    const store = new Store();
    const p = pausable(store);
    p.pause('put', { times: 2 });
    const first = p.proxy.put('x', '1');
    const second = p.proxy.put('y', '2');
    await p.proxy.put('z', '3'); // third call passes straight through
    expect(store.log).toEqual(['put z']);
    expect(p.isPaused('put')).toBe(false);
    const c1 = await p.nextCall('put');
    const c2 = await p.nextCall('put');
    expect([c1.args[0], c2.args[0]]).toEqual(['x', 'y']);
    await c2.release();
    await c1.release();
    await Promise.all([first, second]);
    expect(store.log).toEqual(['put z', 'put y', 'put x']);
  });

  it('nextCall() waits for a call that has not arrived yet', async () => {
    const p = pausable(new Store());
    p.pause('take');
    const next = track(p.nextCall('take'));
    await settle();
    expect(next.settled).toBe(false);
    const taking = p.proxy.take('k');
    const call = await next.promise;
    expect(call.args).toEqual(['k']);
    await call.release();
    expect(await taking).toBeUndefined();
  });

  it('keeps unpaused sync methods synchronous, binds the original, and records every call', async () => {
    const store = new Store();
    const p = pausable(store);
    await p.proxy.put('a', '1');
    expect(p.proxy.size()).toBe(1); // a plain number, not a promise; private fields work
    expect(p.proxy.take).toBe(p.proxy.take); // stable wrappers
    expect(p.calls().map((c) => c.method)).toEqual(['put', 'size']);
    expect(p.count('put')).toBe(1);
  });

  it('releaseAll() lets every held call go and stops pausing', async () => {
    const p = pausable(new Store());
    p.pause('put');
    const puts = [p.proxy.put('a', '1'), p.proxy.put('b', '2')];
    await settle();
    expect(p.waiting('put')).toBe(2);
    await p.releaseAll();
    await Promise.all(puts);
    expect(p.proxy.size()).toBe(2);
    expect(p.isPaused('put')).toBe(false);
  });

  it('a CallGate can be embedded directly in a fake', async () => {
    const gate = new CallGate<'work'>();
    const work = (n: number) => gate.invoke('work', [n], async () => n * 2);
    gate.pause('work', { times: 1 });
    const held = track(work(2));
    expect(await work(3)).toBe(6);
    await (await gate.nextCall('work')).release();
    await settle();
    expect(held.value).toBe(4);
  });
});

describe('Deferred', () => {
  it('settles once and reports it', async () => {
    const d = controllable<number>();
    expect(d).toBeInstanceOf(Deferred);
    expect(d.settled).toBe(false);
    d.resolve(1);
    d.resolve(2);
    d.reject(new Error('ignored'));
    expect(d.settled).toBe(true);
    expect(await d.promise).toBe(1);
  });

  it('track() observes a promise without awaiting it', async () => {
    const d = new Deferred<string>();
    const t = track(d.promise);
    await settle();
    expect(t.status).toBe('pending');
    d.reject(new Error('no'));
    await settle();
    expect(t.status).toBe('rejected');
    expect((t.reason as Error).message).toBe('no');
  });
});
