import { describe, expect, it } from 'vitest';
import type { Logger } from '../logging/logger.js';
import type { SandboxProviderEvent } from './provider-events.js';
import {
  ACQUIRE_PATHS,
  hasProviderEvents,
  hasSandboxCounts,
  SandboxProviderEventEmitter,
} from './provider-events.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';

const adopt = (sandboxId: string): SandboxProviderEvent => ({ type: 'adopt', sandboxId });

describe('SandboxProviderEventEmitter', () => {
  it('delivers each event to every listener in subscription order', () => {
    const emitter = new SandboxProviderEventEmitter();
    const seen: string[] = [];
    emitter.onEvent((e) => seen.push(`1:${e.type}`));
    emitter.onEvent((e) => seen.push(`2:${e.type}`));
    emitter.emit(adopt('s'));
    emitter.emit({ type: 'acquire', sandboxId: 's', path: 'create' });
    expect(seen).toEqual(['1:adopt', '2:adopt', '1:acquire', '2:acquire']);
  });

  it('unsubscribes exactly the subscription it returned, also for a listener added twice', () => {
    const emitter = new SandboxProviderEventEmitter();
    const seen: string[] = [];
    const listener = (e: SandboxProviderEvent) => seen.push(e.type);
    const off1 = emitter.onEvent(listener);
    emitter.onEvent(listener);
    expect(emitter.size).toBe(2);
    off1();
    off1();
    expect(emitter.size).toBe(1);
    emitter.emit(adopt('s'));
    expect(seen).toEqual(['adopt']);
  });

  it('logs a throwing listener and still delivers to the others', () => {
    const warnings: [string, Record<string, unknown> | undefined][] = [];
    const noop = () => {};
    const logger: Logger = {
      debug: noop,
      info: noop,
      error: noop,
      warn: (msg, fields) => warnings.push([msg, fields]),
    };
    const emitter = new SandboxProviderEventEmitter({ logger });
    const failure = new Error('listener bug');
    const seen: string[] = [];
    emitter.onEvent(() => {
      throw failure;
    });
    emitter.onEvent((e) => seen.push(e.type));
    expect(() => emitter.emit(adopt('s'))).not.toThrow();
    expect(seen).toEqual(['adopt']);
    expect(warnings).toEqual([
      ['sandbox provider event listener failed', { event: 'adopt', error: failure }],
    ]);
  });

  it('is unaffected by a listener that unsubscribes another during an emit', () => {
    const emitter = new SandboxProviderEventEmitter();
    const seen: string[] = [];
    let offSecond = () => {};
    emitter.onEvent(() => {
      seen.push('first');
      offSecond();
    });
    offSecond = emitter.onEvent(() => seen.push('second'));
    emitter.emit(adopt('s'));
    emitter.emit(adopt('s'));
    expect(seen).toEqual(['first', 'second', 'first']);
  });
});

describe('capability guards', () => {
  it('recognise providers by their optional members', () => {
    const plain = new MemorySandboxProvider();
    expect(hasProviderEvents(plain)).toBe(false);
    expect(hasSandboxCounts(plain)).toBe(false);
    const capable = Object.assign(new MemorySandboxProvider(), {
      onEvent: () => () => {},
      sandboxCounts: () => ({ active: 0, warm: 0 }),
    });
    expect(hasProviderEvents(capable)).toBe(true);
    expect(hasSandboxCounts(capable)).toBe(true);
  });

  it('names the four acquire paths', () => {
    expect(ACQUIRE_PATHS).toEqual(['reuse', 'reclaim', 'discover', 'create']);
  });
});
