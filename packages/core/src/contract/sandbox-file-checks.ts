import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxPermissionError,
} from '../errors/errors.js';
import { rejectPathTraversal } from '../paths/path-validation.js';
import { VIRTUAL_PATH_PREFIX, isUnderVirtualPrefix } from '../paths/virtual-paths.js';

/**
 * Refuses a file path before it reaches a remote machine: it must be a non-empty string with no
 * `..` segment. A remote cannot confine the path to the caller's directories itself, so this is
 * checked on this side of the wire, before any call is made.
 *
 * @throws InvalidArgumentError for a missing or empty path
 * @throws SandboxPermissionError for a traversal
 */
export function assertSandboxFilePath(path: string): void {
  if (typeof path !== 'string' || path === '') {
    throw new InvalidArgumentError('path must be a non-empty string');
  }
  rejectPathTraversal(path);
}

/**
 * `downloadFile` hands bytes to the host, so it is limited to the thread's data under
 * `/mnt/user-data`; everything else in the sandbox (system files, skills) stays inside it.
 *
 * @throws SandboxPermissionError (EACCES) for a path outside `/mnt/user-data`
 */
export function assertDownloadablePath(path: string): void {
  if (!isUnderVirtualPrefix(path, VIRTUAL_PATH_PREFIX)) {
    throw new SandboxPermissionError(
      `Access denied: only files under ${VIRTUAL_PATH_PREFIX} can be downloaded`,
      { path, operation: 'download', kind: 'EACCES' },
    );
  }
}

/**
 * The text of a file read as bytes. Strict UTF-8: bytes that are not text fail the read (EILSEQ)
 * instead of reaching the agent as replacement characters it would then write back. A BOM is
 * kept, so a read-modify-write round trip leaves the file as it was.
 *
 * @throws SandboxFileError (EILSEQ) for bytes that are not valid UTF-8
 */
export function decodeFileText(bytes: Uint8Array, path: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (error) {
    throw new SandboxFileError(
      `File is not valid UTF-8 text: ${path}`,
      { path, operation: 'read', kind: 'EILSEQ' },
      { cause: error },
    );
  }
}
