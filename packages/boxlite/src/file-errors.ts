import { SandboxFileError, SandboxFileNotFoundError, SandboxPermissionError } from '@sbx/core';

/** Marker lines the transfer scripts print on stderr (see `boxlite-sandbox.ts`). */
export const MISSING_MARKER = 'sbx:missing';
export const IS_DIRECTORY_MARKER = 'sbx:isdir';
export const TOO_LARGE_MARKER = 'sbx:toolarge';

/**
 * The typed error for a failed in-VM file command, from what the shell printed. Shells word their
 * errors differently (dash, bash, busybox), so only the strerror texts every libc shares are used.
 */
export function fileErrorFromStderr(
  stderr: string,
  path: string,
  operation: string,
): SandboxFileError {
  const text = stderr.trim();
  if (text.includes(MISSING_MARKER) || /no such file or directory/i.test(text)) {
    return new SandboxFileNotFoundError(`File not found: ${path}`, {
      path,
      operation,
      kind: 'ENOENT',
    });
  }
  if (/not a directory/i.test(text)) {
    // A file where a parent directory should be: the file asked for cannot exist.
    return new SandboxFileNotFoundError(`File not found: ${path}`, {
      path,
      operation,
      kind: 'ENOTDIR',
    });
  }
  if (text.includes(IS_DIRECTORY_MARKER) || /is a directory/i.test(text)) {
    return new SandboxFileError(`Path is a directory, not a file: ${path}`, {
      path,
      operation,
      kind: 'EISDIR',
    });
  }
  if (/read-only file system/i.test(text)) {
    return new SandboxPermissionError(`Read-only file system: ${path}`, {
      path,
      operation,
      kind: 'EROFS',
    });
  }
  if (/permission denied|operation not permitted/i.test(text)) {
    return new SandboxPermissionError(`Permission denied: ${path}`, {
      path,
      operation,
      kind: 'EACCES',
    });
  }
  return new SandboxFileError(
    `Cannot ${operation} ${path} in the sandbox: ${text || 'the command failed without a message'}`,
    { path, operation, kind: 'EIO' },
  );
}

export function tooLargeError(path: string, size: number, limit: number): SandboxFileError {
  return new SandboxFileError(`File too large: ${path} is ${size} bytes (limit ${limit})`, {
    path,
    operation: 'download',
    kind: 'EFBIG',
  });
}
