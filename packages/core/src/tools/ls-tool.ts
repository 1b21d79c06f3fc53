import { isSbxError } from '../errors/errors.js';
import { fileToolPathRefusal, maskHostPaths } from './local-sandbox-guard.js';
import { resolveToolConfig } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import { describeError, isNotFoundError, isPermissionError } from '../errors/error-inspection.js';
import { runToolInvocation } from './tool-invocation.js';
import { sandboxForTool } from './tool-sandbox.js';
import { parseToolInput, type LsInput } from './tool-schemas.js';
import { truncateLsOutput } from './truncation.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';

/** `ls`: a two-level tree of a directory, one absolute virtual path per line. */
export function lsTool(context: ToolContext, input: LsInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('ls', input);
    if (!parsed.ok) return parsed.error;
    const { path } = parsed.value;
    const config = resolveToolConfig(context.config);
    const acquired = await sandboxForTool(context);
    if (!acquired.ok) return acquired.error;
    const sandbox = acquired.sandbox;
    const refusal = await fileToolPathRefusal(context, sandbox, path, 'read');
    if (refusal) return maskHostPaths(context, sandbox, refusal);
    let result: string;
    try {
      const entries = await sandbox.listDir(path);
      // A missing directory lists as empty (the sandbox contract returns []), unlike glob/grep.
      result = entries.length === 0 ? '(empty)' : entries.join('\n');
    } catch (err) {
      if (isNotFoundError(err)) {
        result = toolFailure(ToolErrorCode.NOT_FOUND, `Error: Directory not found: ${path}`);
      } else if (isPermissionError(err)) {
        result = toolFailure(ToolErrorCode.PERMISSION_DENIED, `Error: Permission denied: ${path}`);
      } else if (isSbxError(err)) result = toolFailure(err.code, `Error: ${err.message}`);
      else {
        result = toolFailure(
          ToolErrorCode.UNEXPECTED,
          `Error: Unexpected error listing directory: ${describeError(err)}`,
        );
      }
    }
    return truncateLsOutput(await maskHostPaths(context, sandbox, result), config.lsOutputMaxChars);
  });
}
