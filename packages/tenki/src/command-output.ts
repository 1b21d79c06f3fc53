/**
 * The output contract of `Sandbox.executeCommand` (the same text every sbx sandbox returns):
 * stdout; then stderr, under a `Std Error:` header only when there is stdout; then a timeout notice,
 * or else a non-zero exit code on its own line; `(no output)` when all of that is empty.
 */
export interface CommandOutcome {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
  /** Seconds after which sbx stopped waiting for the command, when it did. */
  readonly timedOutAfterSeconds?: number | undefined;
}

function formatSeconds(seconds: number): string {
  const amount = Number.isInteger(seconds) ? String(seconds) : String(Number(seconds));
  return `${amount} ${seconds === 1 ? 'second' : 'seconds'}`;
}

/** Same wording as the other sandboxes, so agents learn one message. */
export function timeoutNotice(seconds: number): string {
  return (
    `Command timed out after ${formatSeconds(seconds)} and was terminated. ` +
    'Commands that keep running, such as servers or watchers, block the turn until they are ' +
    'killed: start them in the background with their output redirected, e.g. ' +
    '`your-command > /mnt/user-data/workspace/server.log 2>&1 &`, then check the log.'
  );
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
