import { InvalidArgumentError } from '../errors/errors.js';

/** Default wall clock of one host command when neither the call nor the config sets one. */
export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 600;

/** `1`, `600`, `1.5`: integral values without decimals, others in their shortest form. */
export function formatSeconds(seconds: number): string {
  const amount = Number.isInteger(seconds) ? String(seconds) : String(Number(seconds));
  return `${amount} ${seconds === 1 ? 'second' : 'seconds'}`;
}

/**
 * What the agent reads after its command was killed for running too long. Every sandbox returns
 * this same text, so an agent learns one message and one way out (backgrounding the process).
 */
export function timeoutNotice(seconds: number): string {
  return (
    `Command timed out after ${formatSeconds(seconds)} and was terminated. ` +
    'Commands that keep running, such as servers or watchers, block the turn until they are ' +
    'killed: start them in the background with their output redirected, e.g. ' +
    '`your-command > /mnt/user-data/workspace/server.log 2>&1 &`, then check the log.'
  );
}

/** What one command produced, as `assembleCommandOutput` turns it into the agent's text. */
export interface CommandOutcome {
  readonly stdout: string;
  readonly stderr: string;
  /** Ignored when `timedOut`: a killed command has no exit code worth reporting. */
  readonly exitCode: number;
  /** The command was killed (or abandoned) for running past its limit. */
  readonly timedOut?: boolean | undefined;
  /** The limit in seconds, named by the timeout notice; required when `timedOut`. */
  readonly timeoutSeconds?: number | undefined;
}

/**
 * The one text a command returns: stdout; then stderr (under a `Std Error:` header only when there
 * is stdout); then the timeout notice, or else a non-zero exit code (always on its own line, even
 * after empty output); `(no output)` when all of that is empty.
 */
export function assembleCommandOutput(outcome: CommandOutcome): string {
  let output = outcome.stdout;
  if (outcome.stderr) output = output ? `${output}\nStd Error:\n${outcome.stderr}` : outcome.stderr;
  if (outcome.timedOut) {
    if (outcome.timeoutSeconds === undefined) {
      // The notice must name the limit; a made-up number would mislead the agent.
      throw new InvalidArgumentError('a timed-out command outcome needs its timeoutSeconds');
    }
    const notice = timeoutNotice(outcome.timeoutSeconds);
    output = output ? `${output}\n${notice}` : notice;
  } else if (outcome.exitCode !== 0) {
    output = `${output}\nExit Code: ${outcome.exitCode}`;
  }
  return output || '(no output)';
}
