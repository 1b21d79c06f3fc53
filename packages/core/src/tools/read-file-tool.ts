import { isSbxError } from '../errors/errors.js';
import type { ReadFileOptions } from '../contract/sandbox.js';
import { fileOperationLock } from './file-operation-lock.js';
import { fileToolPathRefusal, maskHostPaths } from './local-sandbox-guard.js';
import { normalizeToolPath, recordFileContent, refreshFileMark } from './read-before-write.js';
import { resolveToolConfig } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import {
  describeError,
  fileErrorKind,
  isMissingFileError,
  isPermissionError,
} from '../errors/error-inspection.js';
import { runToolInvocation } from './tool-invocation.js';
import { sandboxForTool } from './tool-sandbox.js';
import { parseToolInput, type ReadFileInput } from './tool-schemas.js';
import { truncateReadFileOutput } from './truncation.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';

export function binaryFileMessage(path: string): string {
  return (
    `Error: cannot read '${path}' as text: it looks like a binary file (for example .xlsx, .pdf or an image). ` +
    `Inspect it with bash instead, e.g. python with pandas or openpyxl for spreadsheets; ` +
    `for images use the view_image tool if it is available.`
  );
}

/** Argument checks that need no sandbox; the returned text is the tool result. */
function rangeProblem(start: number | undefined, end: number | undefined): string | undefined {
  if (start !== undefined && start < 1) return '(start_line must be >= 1)';
  if (end !== undefined && end < 1) return '(end_line must be >= 1)';
  if (end !== undefined && (start ?? 1) > end) return '(start_line > end_line — no lines in range)';
  return undefined;
}

/**
 * `read_file`: a whole file or a line range. With read-before-write enabled it also records the
 * sha256 of the file's full content, even for a ranged read, because a later write replaces the
 * whole file: the mark must vouch for the file, not for the lines shown.
 */
export function readFileTool(context: ToolContext, input: ReadFileInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('read_file', input);
    if (!parsed.ok) return parsed.error;
    const { path } = parsed.value;
    const start = parsed.value.start_line ?? undefined;
    const end = parsed.value.end_line ?? undefined;
    const problem = rangeProblem(start, end);
    if (problem) return toolFailure(ToolErrorCode.INVALID_ARGUMENTS, problem);

    const config = resolveToolConfig(context.config);
    const acquired = await sandboxForTool(context);
    if (!acquired.ok) return acquired.error;
    const sandbox = acquired.sandbox;
    const refusal = await fileToolPathRefusal(context, sandbox, path, 'read');
    if (refusal) return maskHostPaths(context, sandbox, refusal);

    let result: string;
    try {
      const ranged = start !== undefined || end !== undefined;
      const options: ReadFileOptions = {};
      if (start !== undefined) options.startLine = start;
      if (end !== undefined) options.endLine = end;
      // The lock keeps a concurrent tool write out from between the read and its mark, so the mark
      // always describes the version this call returned (or, for ranges, read right after it).
      const content = await fileOperationLock.runExclusive(
        sandbox.id,
        normalizeToolPath(path),
        async () => {
          const text = await sandbox.readFile(path, ranged ? options : undefined);
          if (config.readBeforeWrite.enabled) {
            if (ranged) await refreshFileMark(context, sandbox, path);
            else await recordFileContent(context, sandbox, path, text);
          }
          return text;
        },
      );
      if (content.length === 0) {
        return start !== undefined && start > 1 ? '(start_line exceeds file length)' : '(empty)';
      }
      // File content is returned verbatim (not path-masked): it is what a later write compares to.
      return truncateReadFileOutput(content, config.readFileOutputMaxChars);
    } catch (err) {
      if (isMissingFileError(err)) {
        result = toolFailure(ToolErrorCode.NOT_FOUND, `Error: File not found: ${path}`);
      } else if (isPermissionError(err)) {
        result = toolFailure(
          ToolErrorCode.PERMISSION_DENIED,
          `Error: Permission denied reading file: ${path}`,
        );
      } else if (fileErrorKind(err) === 'EISDIR') {
        result = toolFailure(
          ToolErrorCode.IS_A_DIRECTORY,
          `Error: Path is a directory, not a file: ${path}`,
        );
      } else if (fileErrorKind(err) === 'EILSEQ') {
        result = toolFailure(ToolErrorCode.BINARY_FILE, binaryFileMessage(path));
      } else if (isSbxError(err)) result = toolFailure(err.code, `Error: ${err.message}`);
      else {
        result = toolFailure(
          ToolErrorCode.UNEXPECTED,
          `Error: Unexpected error reading file: ${describeError(err)}`,
        );
      }
    }
    return maskHostPaths(context, sandbox, result);
  });
}
