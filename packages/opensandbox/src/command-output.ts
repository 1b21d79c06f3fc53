import type { OpenSandboxExecution, OpenSandboxOutputMessage } from './opensandbox-sdk.js';

/**
 * The one text `executeCommand` returns, in the core contract's format (the same as every other
 * sbx sandbox): stdout; stderr under a `Std Error:` header only when there is stdout; then either
 * the timeout notice or a non-zero exit code on its own line; `(no output)` when all is empty.
 */
export interface CommandOutcome {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
  /** Seconds of the limit that stopped the command, when it ran too long. */
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

/**
 * Rebuilds a stream's text from execd's events. execd tails the command's output file and sends
 * one event per line without its terminator (`\n`, `\r` or `\r\n`), an empty line as the text
 * `"\n"`, and a final unterminated line as is. Every line is therefore given back one `\n`: line
 * content and line structure survive exactly, while a missing final newline and a `\r` terminator
 * read as `\n` (the stream does not carry that difference).
 */
export function joinOutputLines(messages: readonly OpenSandboxOutputMessage[]): string {
  let text = '';
  for (const { text: line } of messages) text += line.endsWith('\n') ? line : `${line}\n`;
  return text;
}

/**
 * The exit code of a finished foreground command. The SDK infers it (`exitCode`); older or
 * hand-made executions without the field are inferred the same way: an error event whose value is
 * an integer carries the exit status, a completion event means 0, anything else is unknown.
 */
export function exitCodeOf(execution: OpenSandboxExecution): number | null {
  if (typeof execution.exitCode === 'number') return execution.exitCode;
  if (execution.exitCode === null) return null;
  const value = execution.error?.value?.trim();
  if (execution.error !== undefined) return value && /^-?\d+$/.test(value) ? Number(value) : null;
  return execution.complete ? 0 : null;
}

/** What is known about an execution that did not report an exit code, for the error text. */
export function missingExitDetail(execution: OpenSandboxExecution): string {
  const error = execution.error;
  if (error !== undefined) return `${error.name}: ${error.value}`;
  return 'no completion or error event';
}

/** stdout lines, then result texts (rich results of interpreters), as one stdout text. */
export function stdoutOf(execution: OpenSandboxExecution): string {
  let text = joinOutputLines(execution.logs.stdout);
  for (const result of execution.result) {
    if (result.text) text += result.text.endsWith('\n') ? result.text : `${result.text}\n`;
  }
  return text;
}
