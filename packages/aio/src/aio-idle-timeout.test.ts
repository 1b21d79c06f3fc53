import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness } from './testing/provider-harness.js';
import type { Harness, HarnessOptions } from './testing/provider-harness.js';

// `idle_timeout: 0` disables the idle reaper. The checker's timer does not start then, but an idle
// pass can still run (`runIdleCheck()`, a caller's own schedule): it must stop nothing, since "idle
// for longer than 0 s" holds for every sandbox a moment after its acquire.

const T = (threadId: string) => ({ userId: 'u1', threadId });
const harnesses: Harness[] = [];
async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const h = await makeHarness(options);
  harnesses.push(h);
  return h;
}
afterEach(async () => {
  for (const h of harnesses.splice(0).reverse()) await h.cleanup();
});

describe('idle_timeout 0', () => {
  it('an idle pass stops no active sandbox, however long it has been idle', async () => {
    const h = await harness({ config: { idle_timeout: 0 } });
    const x = await h.provider.acquire(T('t'));
    await h.clock.advance(3_600_000);
    await h.provider.runIdleCheck();
    expect(h.provider.get(x)).toBeDefined();
    expect(h.backend.isRunning(x)).toBe(true);
    expect(h.backend.count('destroy')).toBe(0);
  });
});
