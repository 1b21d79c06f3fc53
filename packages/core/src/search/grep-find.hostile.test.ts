import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOOP_PROBE_SCRIPT, runIsolated } from '../testing/isolated-run.js';

/**
 * Patterns and file contents both come from the model. Each case runs the search in a child
 * process that also runs a 20 ms interval timer and reports its worst lateness: the search must
 * finish (or stop at its deadline) and the event loop must stay free meanwhile. A regression is
 * killed at the child's time limit and fails the test instead of hanging the suite.
 */
let dir: string;

/**
 * Lateness that still says "the loop was free": a search run on the loop would hold it for the
 * whole 1 s deadline or more, while a loaded 2-core machine alone can delay a 20 ms timer by a
 * hundred milliseconds or so.
 */
const LOOP_FREE_MS = 500;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sbx-grep-hostile-'));
  await writeFile(path.join(dir, 'nested.txt'), `${'a'.repeat(28)}!\n`);
  await writeFile(path.join(dir, 'overlap.txt'), `${'a'.repeat(50)}!\n`);
  await writeFile(path.join(dir, 'long-x.txt'), `${'x'.repeat(30_000)}\n`);
  await writeFile(path.join(dir, 'long-a.txt'), `${'a'.repeat(30_000)}\nab\n`);
  await writeFile(path.join(dir, 'multi.txt'), 'first\nsecond line\n');
  await writeFile(path.join(dir, 'emoji.txt'), `${'😀'.repeat(1000)} TODO\n`);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Outcome {
  ok: boolean;
  code?: string;
  matches: number;
  partial?: number;
  ms: number;
  worstLateMs: number;
}

async function hostileGrep(pattern: string, timeoutMs: number): Promise<Outcome> {
  const run = await runIsolated({
    timeoutMs: 60_000,
    script: `
      import { findGrepMatches } from '@sbx/core';
      ${LOOP_PROBE_SCRIPT}
      const t0 = performance.now();
      let out;
      try {
        const r = await findGrepMatches(${JSON.stringify(dir)}, ${JSON.stringify(pattern)}, { timeoutMs: ${timeoutMs} });
        out = { ok: true, matches: r.matches.length };
      } catch (err) {
        out = { ok: false, code: err.code, matches: 0, partial: err.partial?.matches.length };
      }
      stopLoopProbe();
      console.log(JSON.stringify({ ...out, ms: performance.now() - t0, worstLateMs: worstLateMs() }));
    `,
  });
  expect(run.timedOut, run.stderr).toBe(false);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Outcome;
}

describe('grep under hostile patterns', () => {
  it("(a+)+$ on 28 a's stops at its deadline with a typed error, the loop stays free", async () => {
    const outcome = await hostileGrep('(a+)+$', 1_000);
    expect(outcome.ok).toBe(false);
    expect(outcome.code).toBe('SEARCH_TIMEOUT');
    expect(outcome.worstLateMs).toBeLessThan(LOOP_FREE_MS);
  });

  it('^(a|aa)+$ on 50 characters stops at its deadline, the loop stays free', async () => {
    const outcome = await hostileGrep('^(a|aa)+$', 1_000);
    expect(outcome.code).toBe('SEARCH_TIMEOUT');
    expect(outcome.worstLateMs).toBeLessThan(LOOP_FREE_MS);
  });

  it('(x+x+)+y never sees the 30,000-character line (over the line limit)', async () => {
    const outcome = await hostileGrep('(x+x+)+y', 10_000);
    expect(outcome).toMatchObject({ ok: true, matches: 0 });
  });

  it('a+b is not quadratic on a 30,000-character line: only the short line is tested', async () => {
    const outcome = await hostileGrep('a+b', 10_000);
    expect(outcome).toMatchObject({ ok: true, matches: 1 });
    expect(outcome.worstLateMs).toBeLessThan(LOOP_FREE_MS);
  });
});

describe('grep pattern and line rules', () => {
  it('(?m) patterns search instead of crashing on duplicate flags', async () => {
    const outcome = await hostileGrep('(?m)^second', 10_000);
    expect(outcome).toMatchObject({ ok: true, matches: 1 });
  });

  it('the 2,000-character line limit counts code points: 1,000 emoji + " TODO" is searched', async () => {
    const outcome = await hostileGrep('TODO', 10_000);
    expect(outcome).toMatchObject({ ok: true, matches: 1 });
  });
});
