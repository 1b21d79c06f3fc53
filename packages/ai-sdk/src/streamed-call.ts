import type { ToolCallResult, ToolRunner } from '@sbx/core';
import { SbxToolError } from './sbx-tool-error.js';

/**
 * A preliminary result is yielded once the text not yet shown is at least this fraction of what
 * was shown last (the first chunk always): each preliminary result carries the whole output so
 * far, so yielding on every line would send a flooding command's output quadratically; this way
 * all preliminary results together stay within about 17 times the streamed output, itself bounded
 * by the tool's stream limit.
 */
const GROWTH_DIVISOR = 16;

/**
 * One call whose output the AI SDK shows while it runs: an async iterable of preliminary results
 * (the output so far, as the listener gets it: masked, redacted, bounded) ending with the call's
 * text, the final result. A failed call throws `SbxToolError` after its preliminary results.
 */
export async function* streamedCall(
  runner: ToolRunner,
  name: string,
  input: unknown,
  signal: AbortSignal | undefined,
): AsyncGenerator<string, void, undefined> {
  let pending = '';
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    const waiting = wake;
    wake = undefined;
    waiting?.();
  };
  const call: Promise<ToolCallResult> = runner.call(name, input, {
    signal,
    onOutput: (chunk) => {
      pending += chunk.text;
      notify();
    },
  });
  void call.then(
    () => {
      ended = true;
      notify();
    },
    () => {
      ended = true;
      notify();
    },
  );
  let shown = '';
  let shownAtLastYield = 0;
  for (;;) {
    if (pending === '' && !ended) {
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
    if (pending !== '') {
      shown += pending;
      pending = '';
      const unseen = shown.length - shownAtLastYield;
      if (shownAtLastYield === 0 || unseen * GROWTH_DIVISOR >= shownAtLastYield) {
        shownAtLastYield = shown.length;
        yield shown;
      }
    }
    // Every chunk arrives before the call resolves: once it ended and nothing is pending, the
    // stream is complete.
    if (ended && pending === '') break;
  }
  const result = await call;
  if (result.isError) throw new SbxToolError(result);
  yield result.text;
}
