/**
 * Output caps for tool results. Every tool result is bounded so one oversized command or file cannot
 * flood the model's context; `0` disables a cap. The marker texts are part of the model-facing
 * contract (the model is told how much it did not see and how to narrow the request).
 */

export function middleMarker(skipped: number): string {
  return `\n... [middle truncated: ${skipped} chars skipped] ...\n`;
}

/**
 * Keeps the head and the tail of `output` (bash: the command line echo and the final error are
 * usually the interesting parts). The marker is sized for the largest possible `skipped` value (the
 * total length), so the result never exceeds `maxChars`.
 */
export function truncateMiddle(
  output: string,
  maxChars: number,
  marker: (skipped: number) => string = middleMarker,
): string {
  if (maxChars <= 0 || output.length <= maxChars) return output;
  const total = output.length;
  const kept = Math.max(0, maxChars - marker(total).length);
  if (kept === 0) return output.slice(0, maxChars);
  const head = Math.floor(kept / 2);
  const tail = kept - head;
  return output.slice(0, head) + marker(total - kept) + output.slice(total - tail);
}

function headMarker(kept: number, total: number, hint: string): string {
  return `\n... [truncated: showing first ${kept} of ${total} chars. ${hint}] ...`;
}

/** Keeps the head of `output` and appends a marker telling the model how to see the rest. */
export function truncateHead(output: string, maxChars: number, hint: string): string {
  if (maxChars <= 0 || output.length <= maxChars) return output;
  const total = output.length;
  const kept = maxChars - headMarker(total, total, hint).length;
  if (kept <= 0) return output.slice(0, maxChars);
  return output.slice(0, kept) + headMarker(kept, total, hint);
}

export const READ_FILE_TRUNCATION_HINT = 'Use start_line/end_line to read a specific range';
export const LS_TRUNCATION_HINT = 'Use a more specific path to see fewer results';

/** `read_file` cap: head truncation pointing at line ranges. */
export function truncateReadFileOutput(output: string, maxChars: number): string {
  return truncateHead(output, maxChars, READ_FILE_TRUNCATION_HINT);
}

/** `ls` cap: head truncation pointing at narrower paths. */
export function truncateLsOutput(output: string, maxChars: number): string {
  return truncateHead(output, maxChars, LS_TRUNCATION_HINT);
}

/** `bash` cap: middle truncation. */
export function truncateBashOutput(output: string, maxChars: number): string {
  return truncateMiddle(output, maxChars);
}
