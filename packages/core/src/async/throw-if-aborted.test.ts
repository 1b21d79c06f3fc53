import { describe, expect, it } from 'vitest';
import { AbortedError } from '../errors/errors.js';
import { throwIfAborted } from './throw-if-aborted.js';

describe('throwIfAborted', () => {
  it('does nothing without a signal or before it fires', () => {
    expect(() => throwIfAborted(undefined)).not.toThrow();
    expect(() => throwIfAborted(new AbortController().signal)).not.toThrow();
  });

  it('throws AbortedError carrying the reason once the signal fired', () => {
    const controller = new AbortController();
    const reason = new Error('caller left');
    controller.abort(reason);
    let thrown: unknown;
    try {
      throwIfAborted(controller.signal);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AbortedError);
    expect((thrown as AbortedError).cause).toBe(reason);
  });
});
