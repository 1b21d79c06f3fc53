import { isSbxError } from '../errors/errors.js';
import { fileOperationLock } from './file-operation-lock.js';
import { LiteralReplacement, isWellFormedText } from './literal-replacement.js';
import { fileToolPathRefusal, maskHostPaths } from './local-sandbox-guard.js';
import { checkReadBeforeWrite, normalizeToolPath, refreshFileMark } from './read-before-write.js';
import { resolveToolConfig } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import {
  describeError,
  isMissingFileError,
  isPermissionError,
} from '../errors/error-inspection.js';
import { runToolInvocation } from './tool-invocation.js';
import { sandboxForTool } from './tool-sandbox.js';
import { parseToolInput, type StrReplaceInput } from './tool-schemas.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';
import { singleCallWriteLimit, utf8Bytes } from './tool-size-limits.js';

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

export function strReplaceArgumentTooLargeMessage(
  field: 'old_str' | 'new_str',
  bytes: number,
  limit: number,
): string {
  return (
    `Error: str_replace ${field} (${bytes} bytes) exceeds the ${limit}-byte single-call limit. ` +
    (field === 'old_str'
      ? 'Quote a shorter part of the text that is still unique.'
      : 'Make the change in smaller parts, one str_replace call each.')
  );
}

export function strReplaceGrowthTooLargeMessage(
  path: string,
  growth: number,
  replacements: number,
  limit: number,
): string {
  return (
    `Error: str_replace would add ${growth} bytes to ${path} (${replacements} ` +
    `${replacements === 1 ? 'replacement' : 'replacements'}), over the ${limit}-byte single-call ` +
    `limit. The file is unchanged. Replace fewer occurrences per call, or use a shorter new_str.`
  );
}

/** Size and form checks of the arguments, made before the sandbox is touched. */
function argumentProblem(oldStr: string, newStr: string, limit: number): string | undefined {
  for (const [field, value] of [
    ['old_str', oldStr],
    ['new_str', newStr],
  ] as const) {
    const bytes = utf8Bytes(value);
    if (bytes > limit) {
      return toolFailure(
        ToolErrorCode.TOO_LARGE,
        strReplaceArgumentTooLargeMessage(field, bytes, limit),
      );
    }
    // The edit matches UTF-8 bytes; half a surrogate pair has no UTF-8 form to match.
    if (!isWellFormedText(value)) {
      return toolFailure(
        ToolErrorCode.INVALID_ARGUMENTS,
        `Error: Invalid arguments for str_replace: ${field}: must be well-formed Unicode (it contains a lone surrogate)`,
      );
    }
  }
  return undefined;
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
    // Every size is known or bounded before any work: the arguments now, the result (from the
    // number of occurrences, counted in linear time) before it is built.
    const limit = singleCallWriteLimit(config);
    const problem = argumentProblem(oldStr, newStr, limit);
    if (problem) return problem;
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
          if (!isWellFormedText(content)) {
            return toolFailure(
              ToolErrorCode.UNEXPECTED,
              `Error: The text of ${path} is not well-formed Unicode; edit it with bash instead`,
            );
          }
          const edit = await LiteralReplacement.scan(content, oldStr, newStr);
          const { occurrences } = edit;
          if (occurrences === 0) {
            return toolFailure(ToolErrorCode.NO_MATCH, stringNotFoundMessage(path));
          }
          if (occurrences > 1 && !replaceAll) {
            return toolFailure(
              ToolErrorCode.AMBIGUOUS_MATCH,
              ambiguousStringMessage(path, occurrences),
            );
          }
          const growth = edit.growthBytes(replaceAll);
          if (growth > limit) {
            return toolFailure(
              ToolErrorCode.TOO_LARGE,
              strReplaceGrowthTooLargeMessage(path, growth, replaceAll ? occurrences : 1, limit),
            );
          }
          await sandbox.writeFile(path, await edit.apply(replaceAll));
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
