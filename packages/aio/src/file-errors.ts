import { SandboxFileError, SandboxFileNotFoundError, SandboxPermissionError } from '@sbx/core';
import type { FileErrorKind } from '@sbx/core';

/** What the image reports for a failed file operation (`success: false`). */
export interface FileOperationFailure {
  /** `errno_name` of the image's FileOperationError, e.g. `ENOENT`. */
  errnoName?: string | null | undefined;
  /** `error_type`, e.g. `not_found`. */
  errorType?: string | null | undefined;
  message?: string | null | undefined;
}

const BY_ERRNO: Record<string, FileErrorKind> = {
  ENOENT: 'ENOENT',
  ENOTDIR: 'ENOTDIR',
  EISDIR: 'EISDIR',
  EACCES: 'EACCES',
  EPERM: 'EACCES',
  EROFS: 'EROFS',
  EFBIG: 'EFBIG',
  EILSEQ: 'EILSEQ',
};

/**
 * `error_type` values: the image's own (1.9.x–1.11.x: `not_found`, `permission_denied`,
 * `invalid_target`, `already_exists`, `invalid_path`, `read_only_filesystem`, `no_space_left`,
 * `decode_error`, `io_error`) and the spellings of older builds. `invalid_target` (a directory
 * where a file was expected, or the reverse) is told apart by its message.
 */
const BY_TYPE: Record<string, FileErrorKind> = {
  not_found: 'ENOENT',
  file_not_found: 'ENOENT',
  not_a_directory: 'ENOTDIR',
  is_a_directory: 'EISDIR',
  permission_denied: 'EACCES',
  read_only: 'EROFS',
  read_only_filesystem: 'EROFS',
  decode_error: 'EILSEQ',
  invalid_path: 'EINVAL',
  io_error: 'EIO',
  no_space_left: 'EIO',
  already_exists: 'EIO',
};

// Older images report failures as bare messages; these are the phrasings of Python's OSError.
const BY_MESSAGE: [RegExp, FileErrorKind][] = [
  [/no such file|not found|does not exist/i, 'ENOENT'],
  [/not a directory/i, 'ENOTDIR'],
  [/is a directory/i, 'EISDIR'],
  [/read-only file system/i, 'EROFS'],
  [/permission denied|operation not permitted/i, 'EACCES'],
];

/** The errno-style kind of a failure the image reported; `EIO` when it cannot be told. */
export function classifyFileFailure(failure: FileOperationFailure): FileErrorKind {
  const byErrno = failure.errnoName ? BY_ERRNO[failure.errnoName.toUpperCase()] : undefined;
  if (byErrno) return byErrno;
  const message = failure.message ?? '';
  const type = failure.errorType?.toLowerCase();
  if (type === 'invalid_target') return /is a directory/i.test(message) ? 'EISDIR' : 'ENOTDIR';
  const byType = type ? BY_TYPE[type] : undefined;
  if (byType && byType !== 'EIO') return byType;
  if (byType === 'EIO') return BY_MESSAGE.find(([re]) => re.test(message))?.[1] ?? 'EIO';
  return BY_MESSAGE.find(([re]) => re.test(message))?.[1] ?? 'EIO';
}

const REASONS: Record<FileErrorKind, string> = {
  ENOENT: 'No such file or directory',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EACCES: 'Permission denied',
  EROFS: 'Read-only file system',
  EFBIG: 'File too large',
  EILSEQ: 'File is not valid UTF-8 text',
  EIO: 'I/O error',
  EINVAL: 'Invalid path',
};

/**
 * The typed error for a file operation the sandbox refused, naming the caller's path. The image's
 * own message stays available as the `cause`.
 */
export function fileErrorFor(
  failure: FileOperationFailure,
  shown: string,
  operation: string,
): SandboxFileError {
  const kind = classifyFileFailure(failure);
  const init = { path: shown, operation };
  const cause = new Error(failure.message ?? `${operation} failed`);
  if (kind === 'ENOENT' || kind === 'ENOTDIR') {
    return new SandboxFileNotFoundError(`${REASONS[kind]}: ${shown}`, { ...init, kind }, { cause });
  }
  if (kind === 'EACCES' || kind === 'EROFS') {
    return new SandboxPermissionError(`${REASONS[kind]}: ${shown}`, { ...init, kind }, { cause });
  }
  if (kind === 'EIO') {
    const detail = failure.message ? `: ${failure.message}` : '';
    return new SandboxFileError(
      `Cannot ${operation} ${shown}${detail}`,
      { ...init, kind },
      { cause },
    );
  }
  return new SandboxFileError(`${REASONS[kind]}: ${shown}`, { ...init, kind }, { cause });
}
