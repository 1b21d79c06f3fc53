import type { Sandbox } from '../contract/sandbox.js';
import { fileOperationLock } from './file-operation-lock.js';
import { fileToolPathRefusal, maskHostPaths } from './local-sandbox-guard.js';
import { checkReadBeforeWrite, normalizeToolPath, refreshFileMark } from './read-before-write.js';
import { resolveToolConfig } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import {
  describeError,
  fileErrorKind,
  isAuthorizationDenial,
  isPermissionError,
} from '../errors/error-inspection.js';
import { runToolInvocation } from './tool-invocation.js';
import { parseToolInput, type WriteFileInput } from './tool-schemas.js';
import { singleCallWriteLimit, utf8Bytes } from './tool-size-limits.js';
import { truncateMiddle } from './truncation.js';
import { ensureSandboxInitialized } from './ensure-sandbox.js';
import { ToolErrorCode, failureCodeOf, toolFailure } from './tool-result.js';

export const WRITE_FILE_ERROR_MAX_CHARS = 2000;

function writeErrorMarker(skipped: number): string {
  return `\n... [write_file error truncated: ${skipped} chars skipped] ...\n`;
}

export function writeFileTooLargeMessage(bytes: number, limit: number, append = false): string {
  return (
    `Error: write_file content (${bytes} bytes) exceeds the ${limit}-byte single-call limit. ` +
    (append
      ? `Append it in smaller parts, each at most ${limit} bytes.`
      : `Write the file in parts: the first part with this tool, then the rest with append=True, ` +
        `or change an existing file with str_replace.`)
  );
}

async function failureResult(
  context: ToolContext,
  sandbox: Sandbox | undefined,
  path: string,
  err: unknown,
): Promise<string> {
  if (isAuthorizationDenial(err)) {
    const message = await maskHostPaths(context, sandbox, (err as Error).message);
    return toolFailure(failureCodeOf(err), `Error: ${message}`);
  }
  if (isPermissionError(err)) {
    return toolFailure(
      ToolErrorCode.PERMISSION_DENIED,
      `Error: Permission denied writing to file: ${path}`,
    );
  }
  if (fileErrorKind(err) === 'EISDIR') {
    return toolFailure(
      ToolErrorCode.IS_A_DIRECTORY,
      `Error: Path is a directory, not a file: ${path}`,
    );
  }
  // Low-level write errors can be long (paths, errno details); keep head and tail, bounded.
  const text = `Error: Failed to write file '${path}': ${await maskHostPaths(context, sandbox, describeError(err))}`;
  return toolFailure(
    failureCodeOf(err),
    truncateMiddle(text, WRITE_FILE_ERROR_MAX_CHARS, writeErrorMarker),
  );
}

/**
 * `write_file`: creates, overwrites or appends to a file. Every call (append included) is bounded
 * so one huge tool argument cannot be the only copy of a large file, nor exhaust memory. With read-before-write enabled an
 * existing file must have been read (in its current version) first.
 */
export function writeFileTool(context: ToolContext, input: WriteFileInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('write_file', input);
    if (!parsed.ok) return parsed.error;
    const { path, content, append } = parsed.value;
    const config = resolveToolConfig(context.config);
    // Appends are bounded per call like writes (the file may still grow call by call): an
    // unbounded append was one tool argument away from exhausting the gateway's memory. A
    // disabled limit still has the hard ceiling.
    const limit = singleCallWriteLimit(config);
    const bytes = utf8Bytes(content);
    if (bytes > limit) {
      return toolFailure(ToolErrorCode.TOO_LARGE, writeFileTooLargeMessage(bytes, limit, append));
    }

    let sandbox: Sandbox | undefined;
    try {
      sandbox = await ensureSandboxInitialized(context);
    } catch (err) {
      return failureResult(context, undefined, path, err);
    }
    const target = sandbox;
    const refusal = await fileToolPathRefusal(context, target, path, 'write');
    if (refusal) return maskHostPaths(context, target, refusal);

    try {
      return await fileOperationLock.runExclusive(target.id, normalizeToolPath(path), async () => {
        if (config.readBeforeWrite.enabled) {
          const blocked = await checkReadBeforeWrite({
            context,
            sandbox: target,
            path,
            toolName: 'write_file',
          });
          if (blocked) return toolFailure(ToolErrorCode.READ_BEFORE_WRITE, blocked);
        }
        await target.writeFile(path, content, { append });
        if (config.readBeforeWrite.enabled) await refreshFileMark(context, target, path);
        return 'OK';
      });
    } catch (err) {
      return failureResult(context, target, path, err);
    }
  });
}
