import { describe, expect, it } from 'vitest';
import { T, harnessContext } from './aio-test-context.js';

// `idle_timeout: 0` disables the idle reaper. The checker's timer does not start then, but an idle
// pass can still run (`runIdleCheck()`, a caller's own schedule): it must stop nothing, since "idle
// for longer than 0 s" holds for every sandbox a moment after its acquire.

const { harness } = harnessContext();

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
