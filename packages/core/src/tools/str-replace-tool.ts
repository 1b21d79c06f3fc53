import { isSbxError } from '../errors/errors.js';
import { fileOperationLock } from './file-operation-lock.js';
import { fileToolPathRefusal, maskHostPaths } from './local-sandbox-guard.js';
import { checkReadBeforeWrite, normalizeToolPath, refreshFileMark } from './read-before-write.js';
import { resolveToolConfig } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import { describeError, isMissingFileError, isPermissionError } from './tool-errors.js';
import { runToolInvocation } from './tool-invocation.js';
import { sandboxForTool } from './tool-sandbox.js';
import { parseToolInput, type StrReplaceInput } from './tool-schemas.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';

export function stringNotFoundMessage(path: string): string {
  return `Error: String to replace not found in file: ${path}`;
}

/**
 * Divergence from the reference (which silently replaces the first occurrence): an ambiguous
 * `old_str` is refused, because editing whichever occurrence comes first is a guess the model did
 * not make.
 */
export function ambiguousStringMessage(path: string, occurrences: number): string {
  return (
    `Error: String to replace occurs ${occurrences} times in file: ${path}. ` +
    `Include more surrounding context in old_str to make it unique, or set replace_all to true.`
  );
}

function countOccurrences(haystack: string, needle: string): number {
  let count = 0;
  for (
    let at = haystack.indexOf(needle);
    at >= 0;
    at = haystack.indexOf(needle, at + needle.length)
  ) {
    count++;
  }
  return count;
}

/**
 * `str_replace`: replaces an exact substring of a file (one unique occurrence, or all of them). The
 * read-modify-write runs under the file lock, so concurrent edits of one file both land.
 */
export function strReplaceTool(context: ToolContext, input: StrReplaceInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('str_replace', input);
    if (!parsed.ok) return parsed.error;
    const { path, old_str: oldStr, new_str: newStr, replace_all: replaceAll } = parsed.value;
    const config = resolveToolConfig(context.config);
    const acquired = await sandboxForTool(context);
    if (!acquired.ok) return acquired.error;
    const sandbox = acquired.sandbox;
    const refusal = await fileToolPathRefusal(context, sandbox, path, 'write');
    if (refusal) return maskHostPaths(context, sandbox, refusal);

    let result: string;
    try {
      result = await fileOperationLock.runExclusive(
        sandbox.id,
        normalizeToolPath(path),
        async () => {
          if (config.readBeforeWrite.enabled) {
            const blocked = await checkReadBeforeWrite({
              context,
              sandbox,
              path,
              toolName: 'str_replace',
            });
            if (blocked) return toolFailure(ToolErrorCode.READ_BEFORE_WRITE, blocked);
          }
          const content = await sandbox.readFile(path);
          if (oldStr === '') return 'OK';
          const occurrences = content === '' ? 0 : countOccurrences(content, oldStr);
          if (occurrences === 0) {
            return toolFailure(ToolErrorCode.NO_MATCH, stringNotFoundMessage(path));
          }
          if (occurrences > 1 && !replaceAll) {
            return toolFailure(
              ToolErrorCode.AMBIGUOUS_MATCH,
              ambiguousStringMessage(path, occurrences),
            );
          }
          // A function replacement keeps `$&`, `$1`, ... in new_str literal.
          const updated = replaceAll
            ? content.split(oldStr).join(newStr)
            : content.replace(oldStr, () => newStr);
          await sandbox.writeFile(path, updated);
          if (config.readBeforeWrite.enabled) await refreshFileMark(context, sandbox, path);
          return 'OK';
        },
      );
    } catch (err) {
      if (isMissingFileError(err)) {
        result = toolFailure(ToolErrorCode.NOT_FOUND, `Error: File not found: ${path}`);
      } else if (isPermissionError(err)) {
        result = toolFailure(
          ToolErrorCode.PERMISSION_DENIED,
          `Error: Permission denied accessing file: ${path}`,
        );
      } else if (isSbxError(err)) result = toolFailure(err.code, `Error: ${err.message}`);
      else {
        result = toolFailure(
          ToolErrorCode.UNEXPECTED,
          `Error: Unexpected error replacing string: ${describeError(err)}`,
        );
      }
    }
    return maskHostPaths(context, sandbox, result);
  });
}
