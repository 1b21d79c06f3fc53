import { isSbxError } from '../errors.js';
import type { Sandbox } from '../sandbox.js';
import { ensureSandboxInitialized } from './ensure-sandbox.js';
import { maskHostPaths } from './local-sandbox-guard.js';
import type { ToolContext } from './tool-context.js';
import { describeError } from './tool-errors.js';

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
      return { ok: false, error: `Error: ${await maskHostPaths(context, undefined, err.message)}` };
    }
    const detail = await maskHostPaths(context, undefined, describeError(err));
    return { ok: false, error: `Error: Unexpected error initializing sandbox: ${detail}` };
  }
}
