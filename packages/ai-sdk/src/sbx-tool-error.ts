import type { ToolCallResult } from '@sbx/core';

/**
 * A tool call sbx reported as failed, thrown from `execute` so the AI SDK records it the native
 * way: a `tool-error` part whose text the model reads. The message is the tool's whole result text
 * (for a timed-out search that includes the matches found so far).
 */
export class SbxToolError extends Error {
  override readonly name = 'SbxToolError';
  /** A `ToolErrorCode` or the code of the sbx error behind the failure. */
  readonly code: string;

  constructor(result: ToolCallResult) {
    super(result.text);
    this.code = result.error?.code ?? 'UNEXPECTED';
  }
}
