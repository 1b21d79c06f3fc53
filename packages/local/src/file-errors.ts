import {
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxPermissionError,
  isSbxError,
} from '@sbx/core';

function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

/**
 * The typed error for a failed host file operation, naming the caller's (virtual) path only: Node's
 * own messages carry the host path, which must never reach an agent. The original error stays
 * available as `cause` for the host application's logs.
 */
export function toFileError(err: unknown, shown: string, operation: string): Error {
  if (isSbxError(err)) return err;
  const code = errnoCode(err);
  const init = { path: shown, operation };
  const options = { cause: err };
  switch (code) {
    case 'ENOENT':
      return new SandboxFileNotFoundError(
        `No such file or directory: ${shown}`,
        { ...init, kind: 'ENOENT' },
        options,
      );
    case 'ENOTDIR':
      return new SandboxFileNotFoundError(
        `Not a directory: ${shown}`,
        { ...init, kind: 'ENOTDIR' },
        options,
      );
    case 'EISDIR':
      return new SandboxFileError(`Is a directory: ${shown}`, { ...init, kind: 'EISDIR' }, options);
    case 'EACCES':
    case 'EPERM':
      return new SandboxPermissionError(`Permission denied: ${shown}`, init, options);
    case 'EROFS':
      return new SandboxPermissionError(
        `Read-only file system: ${shown}`,
        { ...init, kind: 'EROFS' },
        options,
      );
    case 'EFBIG':
      return new SandboxFileError(`File too large: ${shown}`, { ...init, kind: 'EFBIG' }, options);
    default:
      return new SandboxFileError(
        `Cannot ${operation} ${shown}: ${code ?? 'I/O error'}`,
        { ...init, kind: 'EIO' },
        options,
      );
  }
}

export function notUtf8Error(shown: string, operation: string, cause: unknown): SandboxFileError {
  return new SandboxFileError(
    `File is not valid UTF-8 text: ${shown}`,
    { path: shown, operation, kind: 'EILSEQ' },
    { cause },
  );
}
