import type { OpenSandboxExecution, OpenSandboxOutputMessage } from './opensandbox-sdk.js';

/*
 * Reading an execd `CommandExecution` for the core output contract (`assembleCommandOutput` of
 * @sbx/core): the stream texts, the exit code, and what to say when there is none.
 */

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
