import { afterEach } from 'vitest';
import { makeHarness } from './testing/provider-harness.js';
import type { Harness, HarnessOptions } from './testing/provider-harness.js';

// The context the provider's test files build on the harness: every harness made through it is
// cleaned up after each test, one at a time and newest first, so a peer stops before the instance
// whose lease table and container backend it shares (a test that fails half-way leaks nothing
// into the next). Test support only: nothing in the package's entry imports it.

/** A thread of the one user these tests act for. */
export const T = (threadId: string) => ({ userId: 'u1', threadId });

export interface HarnessContext {
  /** A new instance on its own store and backend. */
  harness(options?: HarnessOptions): Promise<Harness>;
  /** Another instance sharing `h`'s lease table and container backend. */
  peerOf(h: Harness, options?: Parameters<Harness['peer']>[0]): Promise<Harness>;
}

/** Call once at the top of a test file (or a `describe`): registers the cleanup there. */
export function harnessContext(): HarnessContext {
  const harnesses: Harness[] = [];
  afterEach(async () => {
    for (const h of harnesses.splice(0).reverse()) await h.cleanup();
  });
  const kept = (h: Harness) => {
    harnesses.push(h);
    return h;
  };
  return {
    harness: async (options = {}) => kept(await makeHarness(options)),
    peerOf: async (h, options = {}) => kept(await h.peer(options)),
  };
}
