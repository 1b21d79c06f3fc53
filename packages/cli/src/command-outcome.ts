import { ExitCode } from './exit-codes.js';

/** A command's result text taken apart: what it printed, and how it ended. */
export interface CommandOutcome {
  /** stdout, then stderr (the sandbox contract merges them into one text). */
  readonly output: string;
  readonly exitCode: number;
  readonly timedOut: boolean;
  /** The provider's notice when the command was killed for running too long. */
  readonly notice: string | undefined;
}

const EXIT_CODE_LINE = /(?:^|\n)Exit Code: (-?\d+)$/;
const TIMEOUT_LINE = /(?:^|\n)(Command timed out after [^\n]*)$/;
const NO_OUTPUT = '(no output)';

/**
 * Reads the sandbox contract's result text back (see `Sandbox.executeCommand`): a final
 * `Exit Code: N` line reports a non-zero status, a final timeout notice a killed command, and
 * `(no output)` stands for empty output. The format has no escaping, so a command whose own last
 * line is `Exit Code: 3` is indistinguishable from one that exited with 3.
 */
export function parseCommandOutput(text: string): CommandOutcome {
  const timeout = TIMEOUT_LINE.exec(text);
  if (timeout) {
    return {
      output: text.slice(0, timeout.index),
      exitCode: ExitCode.EXEC_TIMEOUT,
      timedOut: true,
      notice: timeout[1],
    };
  }
  const exit = EXIT_CODE_LINE.exec(text);
  if (exit) {
    return {
      output: text.slice(0, exit.index),
      exitCode: processExitStatus(Number(exit[1])),
      timedOut: false,
      notice: undefined,
    };
  }
  return {
    output: text === NO_OUTPUT ? '' : text,
    exitCode: 0,
    timedOut: false,
    notice: undefined,
  };
}

/** A status a process can exit with: 1..255 as is; anything else non-zero (signals as -N) → 1. */
function processExitStatus(code: number): number {
  return Number.isInteger(code) && code >= 1 && code <= 255 ? code : ExitCode.FAILURE;
}
