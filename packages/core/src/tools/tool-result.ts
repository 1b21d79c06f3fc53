import { isSbxError } from '../errors/errors.js';
import type { CommandDetails } from './command-details.js';
import { recordToolFailure } from './tool-invocation.js';

/**
 * Failure codes the tools give their own refusals. Failures caused by a typed sbx error carry that
 * error's `code` instead (`SANDBOX_AUTHORIZATION`, `SEARCH_TIMEOUT`, `CONFIG_INVALID`, ...).
 */
export const ToolErrorCode = {
  /** The model called a tool that does not exist. */
  UNKNOWN_TOOL: 'UNKNOWN_TOOL',
  /** The arguments failed the tool's input schema. */
  INVALID_ARGUMENTS: 'INVALID_ARGUMENTS',
  /** The file or directory does not exist. */
  NOT_FOUND: 'NOT_FOUND',
  NOT_A_DIRECTORY: 'NOT_A_DIRECTORY',
  IS_A_DIRECTORY: 'IS_A_DIRECTORY',
  PERMISSION_DENIED: 'PERMISSION_DENIED',
  /** The path is outside what the agent may touch (a local sandbox's path rules). */
  PATH_NOT_ALLOWED: 'PATH_NOT_ALLOWED',
  /** write_file / str_replace of an existing file the agent has not read in its current version. */
  READ_BEFORE_WRITE: 'READ_BEFORE_WRITE',
  /** str_replace: `old_str` does not occur. */
  NO_MATCH: 'NO_MATCH',
  /** str_replace: `old_str` occurs more than once and `replace_all` is off. */
  AMBIGUOUS_MATCH: 'AMBIGUOUS_MATCH',
  /**
   * An argument, or what the call would build, is over a size limit: write_file content,
   * str_replace's old_str and new_str, and what one str_replace would add to a file.
   */
  TOO_LARGE: 'TOO_LARGE',
  /** read_file of a file that is not text. */
  BINARY_FILE: 'BINARY_FILE',
  /** grep's pattern is not a valid regular expression. */
  INVALID_PATTERN: 'INVALID_PATTERN',
  /** Anything not foreseen: a bug or an untyped failure of a dependency. */
  UNEXPECTED: 'UNEXPECTED',
} as const;

export type ToolErrorCodeValue = (typeof ToolErrorCode)[keyof typeof ToolErrorCode];

/**
 * A tool call's structured result. `text` is exactly what the model reads (what `runTool`
 * returns). `isError` is decided by the tool, never inferred from the text: a file whose first
 * line is `Error: ...` reads successfully.
 */
export interface ToolCallResult {
  readonly text: string;
  readonly isError: boolean;
  /** Present exactly when `isError`. */
  readonly error?: {
    /** A `ToolErrorCode` or the `code` of the sbx error behind the failure. */
    readonly code: string;
    /** `text` without the leading `Error: `. */
    readonly message: string;
  };
  /**
   * Present when the call ran a command (`bash`, `process_output`, `process_write`,
   * `process_kill`), also when it failed: exit code, still running, process id, the output as
   * data (see `CommandDetails`).
   */
  readonly command?: CommandDetails;
}

/**
 * Records the current tool invocation as failed with `code` and returns `text` unchanged, so an
 * error site reads `return toolFailure(ToolErrorCode.NOT_FOUND, \`Error: ...\`)`.
 */
export function toolFailure(code: string, text: string): string {
  recordToolFailure(code);
  return text;
}

/** The failure code of a caught error: its sbx code when typed, else `UNEXPECTED`. */
export function failureCodeOf(err: unknown): string {
  return isSbxError(err) ? err.code : ToolErrorCode.UNEXPECTED;
}

/** Builds the structured result from a tool's text and what it recorded. */
export function toolCallResult(
  text: string,
  failureCode: string | undefined,
  command?: CommandDetails,
): ToolCallResult {
  const details = command ? { command } : {};
  if (failureCode === undefined) return { text, isError: false, ...details };
  const message = text.startsWith('Error: ') ? text.slice('Error: '.length) : text;
  return { text, isError: true, error: { code: failureCode, message }, ...details };
}
