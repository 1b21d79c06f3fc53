import { isSbxError } from '../errors/errors.js';
import {
  describeError,
  fileErrorKind,
  isNotFoundError,
  isPermissionError,
} from '../errors/error-inspection.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';

/**
 * The failure text of a glob or grep below `path`, shared by both: a missing or non-directory
 * root, a refused one, a typed sbx error, anything else. `what` names the search in the last case
 * ("searching paths", "searching file contents").
 */
export function searchFailure(err: unknown, path: string, what: string): string {
  if (isNotFoundError(err)) {
    return toolFailure(ToolErrorCode.NOT_FOUND, `Error: Directory not found: ${path}`);
  }
  if (fileErrorKind(err) === 'ENOTDIR') {
    return toolFailure(ToolErrorCode.NOT_A_DIRECTORY, `Error: Path is not a directory: ${path}`);
  }
  if (isPermissionError(err)) {
    return toolFailure(ToolErrorCode.PERMISSION_DENIED, `Error: Permission denied: ${path}`);
  }
  if (isSbxError(err)) return toolFailure(err.code, `Error: ${err.message}`);
  return toolFailure(
    ToolErrorCode.UNEXPECTED,
    `Error: Unexpected error ${what}: ${describeError(err)}`,
  );
}
