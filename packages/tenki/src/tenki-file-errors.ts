import {
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxPermissionError,
  SandboxRuntimeError,
  errorMessage,
  isSbxError,
} from '@sbx/core';
import { isTerminalTenkiError, tenkiFileProblem } from './tenki-errors.js';

/**
 * The typed error of a failed file call on `path`: a file problem (missing, not a directory, a
 * directory, no permission) is the caller's and says so; a failure that means the session is gone
 * is reported through `onSessionGone` (the adapter closes and the provider evicts the microVM)
 * before its error is returned; anything else is an I/O error of that file.
 */
export function fileErrorFromTenki(
  error: unknown,
  path: string,
  operation: string,
  onSessionGone: (error: unknown) => void,
): Error {
  if (isSbxError(error)) return error;
  switch (tenkiFileProblem(error)) {
    case 'missing':
      return new SandboxFileNotFoundError(
        `File not found: ${path}`,
        { path, operation, kind: 'ENOENT' },
        { cause: error },
      );
    case 'not-directory':
      return new SandboxFileNotFoundError(
        `File not found: ${path}`,
        { path, operation, kind: 'ENOTDIR' },
        { cause: error },
      );
    case 'is-directory':
      return new SandboxFileError(
        `Path is a directory, not a file: ${path}`,
        { path, operation, kind: 'EISDIR' },
        { cause: error },
      );
    case 'permission':
      return new SandboxPermissionError(
        `Permission denied: ${path}`,
        { path, operation, kind: 'EACCES' },
        { cause: error },
      );
    default:
      break;
  }
  if (isTerminalTenkiError(error)) {
    onSessionGone(error);
    return new SandboxRuntimeError(
      `cannot ${operation} '${path}': the sandbox session is gone (${errorMessage(error)})`,
      { cause: error },
    );
  }
  return new SandboxFileError(
    `cannot ${operation} '${path}' in the sandbox: ${errorMessage(error)}`,
    { path, operation, kind: 'EIO' },
    { cause: error },
  );
}
