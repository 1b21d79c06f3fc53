import { describe, expect, it } from 'vitest';
import { runIsolated } from '../testing/isolated-run.js';

/**
 * Globs come from the model. A backtracking matcher is polynomial in the number of `*` (and
 * exponential with `**`), so one glob call could hold the event loop for minutes. Each case runs
 * in a child with a time limit: a regression fails here instead of hanging the suite.
 */
describe('glob matching is linear in the name (hostile patterns)', () => {
  it.each([
    ['*a*a*a*a*b', 'a'.repeat(200)],
    ['*a*a*a*a*a*a*a*a*b', 'a'.repeat(2000)],
    ['**/**/**/**/**/**/x', Array.from({ length: 200 }, () => 'a').join('/')],
    ['a*a*a*a*a*a*a*a*a*a*a*a*{b,c}', 'a'.repeat(2000)],
  ])('%s against a long name finishes at once', async (pattern, name) => {
    const run = await runIsolated({
      timeoutMs: 60_000,
      script: `
        import { compileGlob } from '@sbx/core';
        const match = compileGlob(${JSON.stringify(pattern)});
        const t0 = performance.now();
        for (let i = 0; i < 20; i++) match(${JSON.stringify(name)});
        console.log(JSON.stringify({ ms: performance.now() - t0, hit: match(${JSON.stringify(name)}) }));
      `,
    });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const { ms, hit } = JSON.parse(run.stdout) as { ms: number; hit: boolean };
    expect(hit).toBe(false);
    // 20 matches of a 2,000-character name: linear work is well under a second even on a slow
    // machine; the backtracking matcher took minutes.
    expect(ms).toBeLessThan(2_000);
  });
});
