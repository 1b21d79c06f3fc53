import { isSbxError } from '../errors/errors.js';
import type { Sandbox } from '../contract/sandbox.js';
import { ensureSandboxInitialized } from './ensure-sandbox.js';
import { maskHostPaths } from './local-sandbox-guard.js';
import type { ToolContext } from './tool-context.js';
import { describeError } from '../errors/error-inspection.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';

export type ToolSandboxResult = { ok: true; sandbox: Sandbox } | { ok: false; error: string };

/**
 * `ensureSandboxInitialized` for a tool body: a failure becomes the tool's error result instead of
 * an exception (an authorization denial included), with host paths masked.
 */
export async function sandboxForTool(context: ToolContext): Promise<ToolSandboxResult> {
  try {
    return { ok: true, sandbox: await ensureSandboxInitialized(context) };
  } catch (err) {
    if (isSbxError(err)) {
      const message = await maskHostPaths(context, undefined, err.message);
      return { ok: false, error: toolFailure(err.code, `Error: ${message}`) };
    }
    const detail = await maskHostPaths(context, undefined, describeError(err));
    const error = `Error: Unexpected error initializing sandbox: ${detail}`;
    return { ok: false, error: toolFailure(ToolErrorCode.UNEXPECTED, error) };
  }
}
