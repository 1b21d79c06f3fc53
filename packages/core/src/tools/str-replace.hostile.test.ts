import { describe, expect, it } from 'vitest';
import { LOOP_PROBE_SCRIPT, runIsolated } from '../testing/isolated-run.js';

/**
 * One `str_replace` call may name any file the agent made and any `old_str` / `new_str`. Each
 * case runs in a child with a small heap and a time limit, on the memory sandbox (the gateway's
 * own work, without a provider's): a regression fails here instead of taking the test runner down.
 * The child prints what the call returned, how late a 20 ms timer ran at worst while it worked, and
 * how much its resident memory grew.
 */
// The bound on the loop's lateness tells "yields every MiB" from the former minutes-long stalls; it
// is loose because a child starved of CPU on a loaded two-core machine runs its timer late too.
const LOOP_LATE_BOUND_MS = 5_000;

interface Outcome {
  code: string | null;
  text: string;
  lateMs: number;
  rssGrowthMb: number;
}

async function hostileEdit(fileExpression: string, args: string): Promise<Outcome> {
  const run = await runIsolated({
    maxOldSpaceMb: 128,
    script: `
      import { createToolContext, runToolCall } from '@sbx/core';
      import { MemorySandboxProvider } from '@sbx/core/testing';
      const P = '/mnt/user-data/workspace/f.txt';
      const provider = new MemorySandboxProvider();
      const context = createToolContext({
        provider, threadId: 't', config: { readBeforeWrite: { enabled: false } },
      });
      const sandbox = provider.sandboxes.get(await provider.acquire({ threadId: 't' }));
      sandbox.setFile(P, ${fileExpression});
      const args = { path: P, ...${args} };
      ${LOOP_PROBE_SCRIPT}
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      const result = await runToolCall('str_replace', args, context);
      clearInterval(sampler);
      stopLoopProbe();
      console.log(JSON.stringify({
        code: result.error?.code ?? null,
        text: result.text.slice(0, 300),
        lateMs: worstLateMs(),
        rssGrowthMb: (peak - before) / 2 ** 20,
      }));
    `,
  });
  expect(run.timedOut, `timed out; stderr: ${run.stderr}`).toBe(false);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Outcome;
}

describe('str_replace cannot exhaust the gateway (isolated)', () => {
  it('replace_all of 80 KB of "a" by a 6 KB new_str (458 MiB) is refused before it is built', async () => {
    const outcome = await hostileEdit(
      `'a'.repeat(80_000)`,
      `{ old_str: 'a', new_str: 'b'.repeat(6_000), replace_all: true }`,
    );
    expect(outcome.code, outcome.text).toBe('TOO_LARGE');
    expect(outcome.text).toMatch(/would add 479920000 bytes/);
    // The former code built the 458 MiB string: out of memory in this heap, or seconds of stall.
    expect(outcome.rssGrowthMb).toBeLessThan(64);
    expect(outcome.lateMs).toBeLessThan(LOOP_LATE_BOUND_MS);
  });

  it('replace_all of every byte of a 16 MiB file by nothing runs in bounded memory', async () => {
    // `split` made an array of 16 million strings here, far past this heap.
    const outcome = await hostileEdit(
      `'a'.repeat(16 * 1024 * 1024)`,
      `{ old_str: 'a', new_str: '', replace_all: true }`,
    );
    expect(outcome.code, outcome.text).toBe(null);
    expect(outcome.text).toBe('OK');
    expect(outcome.lateMs).toBeLessThan(LOOP_LATE_BOUND_MS);
  });

  it('an old_str whose long suffix keeps matching does not hold the event loop', async () => {
    // `/x` then 40,000 `/a`, in 8 MiB of `/a/a/...`: the engine's Boyer-Moore indexOf compares
    // the whole suffix at every other byte (minutes); the linear scan reads each byte once.
    const outcome = await hostileEdit(
      `'/a'.repeat(4 * 1024 * 1024)`,
      `{ old_str: '/x' + '/a'.repeat(40_000), new_str: 'y' }`,
    );
    expect(outcome.code, outcome.text).toBe('NO_MATCH');
    expect(outcome.lateMs).toBeLessThan(LOOP_LATE_BOUND_MS);
  });
});
