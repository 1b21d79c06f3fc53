import { SandboxFileError, SandboxFileNotFoundError, SandboxPermissionError } from '@sbx/core';
import { describeRemoteError, statusCodeOf } from './terminal-errors.js';

/** Text of an SDK error and of the server's error body, where the OS error usually is. */
function textOf(error: unknown): string {
  const parts: string[] = [describeRemoteError(error)];
  const raw = (error as { rawBody?: unknown } | null)?.rawBody;
  if (typeof raw === 'string') parts.push(raw);
  else if (raw && typeof raw === 'object') {
    const message = (raw as { message?: unknown }).message;
    if (typeof message === 'string') parts.push(message);
  }
  return parts.join(' ').toLowerCase();
}

/**
 * The typed error for a failed execd file call. execd answers a missing file with 404 and any other
 * OS failure with 500 and the OS message (Go's wording), so the message decides the kind.
 */
export function fileErrorFromRemote(
  error: unknown,
  path: string,
  operation: string,
): SandboxFileError {
  const status = statusCodeOf(error);
  const text = textOf(error);
  const options = { cause: error };
  if (status === 404 || text.includes('no such file or directory')) {
    return new SandboxFileNotFoundError(
      `File not found: ${path}`,
      { path, operation, kind: 'ENOENT' },
      options,
    );
  }
  if (text.includes('not a directory')) {
    // A file where a parent directory should be: the file asked for cannot exist.
    return new SandboxFileNotFoundError(
      `File not found: ${path}`,
      { path, operation, kind: 'ENOTDIR' },
      options,
    );
  }
  if (text.includes('is a directory')) {
    return new SandboxFileError(
      `Path is a directory, not a file: ${path}`,
      { path, operation, kind: 'EISDIR' },
      options,
    );
  }
  if (text.includes('read-only file system')) {
    return new SandboxPermissionError(
      `Read-only file system: ${path}`,
      { path, operation, kind: 'EROFS' },
      options,
    );
  }
  if (
    status === 403 ||
    text.includes('permission denied') ||
    text.includes('operation not permitted')
  ) {
    return new SandboxPermissionError(
      `Permission denied: ${path}`,
      { path, operation, kind: 'EACCES' },
      options,
    );
  }
  return new SandboxFileError(
    `Cannot ${operation} ${path} in the OpenSandbox sandbox: ${describeRemoteError(error)}`,
    { path, operation, kind: 'EIO' },
    options,
  );
}

export function tooLargeError(path: string, limit: number): SandboxFileError {
  return new SandboxFileError(`File too large: ${path} exceeds ${limit} bytes`, {
    path,
    operation: 'download',
    kind: 'EFBIG',
  });
}
