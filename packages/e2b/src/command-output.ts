/**
 * The one text `executeCommand` returns, in the core contract's format (the same as every other
 * sbx sandbox): stdout; stderr under a `Std Error:` header only when there is stdout; then either
 * the timeout notice or a non-zero exit code on its own line; `(no output)` when all is empty.
 */

/** The SDK's own default for `commands.run` when no `timeoutMs` is given. */
export const SDK_DEFAULT_COMMAND_TIMEOUT_MS = 60_000;

export function formatSeconds(seconds: number): string {
  const amount = Number.isInteger(seconds) ? String(seconds) : String(Number(seconds));
  return `${amount} ${seconds === 1 ? 'second' : 'seconds'}`;
}

export function timeoutNotice(seconds: number): string {
  return (
    `Command timed out after ${formatSeconds(seconds)} and was terminated. ` +
    'Commands that keep running, such as servers or watchers, block the turn until they are ' +
    'killed: start them in the background with their output redirected, e.g. ' +
    '`your-command > /mnt/user-data/workspace/server.log 2>&1 &`, then check the log.'
  );
}

export interface CommandOutcome {
  stdout: string;
  stderr: string;
  exitCode: number;
  /** Seconds of the limit that killed the command, when it was killed for running too long. */
  timedOutAfterSeconds?: number;
}

export function assembleCommandOutput(outcome: CommandOutcome): string {
  let output = outcome.stdout;
  if (outcome.stderr) output = output ? `${output}\nStd Error:\n${outcome.stderr}` : outcome.stderr;
  if (outcome.timedOutAfterSeconds !== undefined) {
    const notice = timeoutNotice(outcome.timedOutAfterSeconds);
    output = output ? `${output}\n${notice}` : notice;
  } else if (outcome.exitCode !== 0) {
    output = `${output}\nExit Code: ${outcome.exitCode}`;
  }
  return output || '(no output)';
}
