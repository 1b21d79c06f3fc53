import type { ExecResult } from './sandbox-exec.js';
import { assembleCommandOutput } from '../command/command-output.js';

/**
 * The reference-compatible text of a structured result (what `executeCommand` returns): stdout,
 * stderr under `Std Error:`, then the timeout notice or a non-zero `Exit Code:` line. A result
 * with no status that did not time out (the backend lost it) reads as `Exit Code: -1`, never as
 * a success.
 */
export function execResultText(result: ExecResult): string {
  if (result.notice !== undefined && (result.timedOut || !result.exitCode)) {
    const body = assembleCommandOutput({
      stdout: result.stdout,
      stderr: result.stderr,
      exitCode: 0,
    });
    return body === '(no output)' ? result.notice : `${body}\n${result.notice}`;
  }
  return assembleCommandOutput({
    stdout: result.stdout,
    stderr: result.stderr,
    exitCode: result.exitCode ?? -1,
    timedOut: result.timedOut,
    timeoutSeconds: result.timeoutMs === undefined ? undefined : result.timeoutMs / 1000,
  });
}
