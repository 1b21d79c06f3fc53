import type { ExecOptions, ExecResult } from '../contract/sandbox-exec.js';

export interface OneShotOutcome {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** The limit that applied, in milliseconds. */
  readonly timeoutMs?: number | undefined;
  readonly truncated?: boolean;
  readonly signal?: string;
}

/**
 * The `ExecResult` of a backend that returns a command's output only when it has ended (its
 * `capabilities.streaming` is false): listeners are called once each, with everything, as the
 * contract says. A listener that throws does not lose the result; the error is reported to
 * `onListenerError`.
 */
export function oneShotExecResult(
  outcome: OneShotOutcome,
  options: Pick<ExecOptions, 'onStdout' | 'onStderr'>,
  startedAt: number,
  onListenerError: (error: unknown) => void,
): ExecResult {
  const call = (listener: ((text: string) => void) | undefined, text: string) => {
    if (listener === undefined || text === '') return;
    try {
      listener(text);
    } catch (error) {
      onListenerError(error);
    }
  };
  call(options.onStdout, outcome.stdout);
  call(options.onStderr, outcome.stderr);
  return {
    exitCode: outcome.timedOut ? null : outcome.exitCode,
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    durationMs: performance.now() - startedAt,
    truncated: outcome.truncated ?? false,
    timedOut: outcome.timedOut,
    ...(outcome.timeoutMs !== undefined ? { timeoutMs: outcome.timeoutMs } : {}),
    ...(outcome.signal !== undefined ? { signal: outcome.signal } : {}),
  };
}

/**
 * Whether a one-shot backend's result is its own time limit at work: backends that kill a
 * command in the VM at its limit report an ordinary end (SIGKILL's 137, `timeout`'s 124, a
 * negative or missing status), so a status like that after the full limit is a timeout.
 */
export function killedAtLimit(
  exitCode: number | null | undefined,
  elapsedMs: number,
  timeoutMs: number | undefined,
): boolean {
  if (timeoutMs === undefined || elapsedMs < timeoutMs) return false;
  return (
    exitCode === null ||
    exitCode === undefined ||
    exitCode === 137 ||
    exitCode === 124 ||
    exitCode < 0
  );
}
