import {
  InvalidArgumentError,
  ensureSandboxInitialized,
  errorMessage,
  fileOperationLock,
  isSbxError,
  runToolInvocation,
  type Sandbox,
  type ToolContext,
} from '@sbx/core';
import {
  assertPathArgument,
  guardFileToolPath,
  maskHostPaths,
  normalizeToolPath,
} from '@sbx/core/internal';
import type { FileDownloadResponse, FileOperationError, FileUploadResponse } from 'deepagents';

/** Most files one `uploadFiles` / `downloadFiles` call moves. */
export const MAX_TRANSFER_FILES = 1000;

/**
 * Most bytes one `uploadFiles` / `downloadFiles` call moves, all files together: a download holds
 * what it returns in memory, so the bound is on the call, not only on each file (the provider caps
 * each download on its own, 100 MiB for the local one).
 */
export const MAX_TRANSFER_BYTES = 256 * 1024 * 1024;

/** The error code deepagents knows for a failure, or undefined when it has none for it. */
function operationError(err: unknown): FileOperationError | undefined {
  if (!isSbxError(err)) return undefined;
  const kind = (err as { kind?: unknown }).kind;
  if (kind === 'ENOENT' || kind === 'ENOTDIR') return 'file_not_found';
  if (kind === 'EISDIR') return 'is_directory';
  if (kind === 'EACCES' || kind === 'EROFS') return 'permission_denied';
  return undefined;
}

/**
 * The path checks of a file tool: bounded and NUL-free, then the sandbox's path rules for the
 * access. A path outside what the agent may touch is `permission_denied`, a missing parent
 * `file_not_found`, any other refusal (too long, a NUL) `invalid_path`.
 */
async function checkedPath(
  context: ToolContext,
  sandbox: Sandbox,
  path: unknown,
  access: 'read' | 'write',
): Promise<FileOperationError | undefined> {
  try {
    assertPathArgument(path as string);
    await guardFileToolPath(context, sandbox, path as string, access);
    return undefined;
  } catch (err) {
    // A missing file (or parent) is reported as such, as deepagents' callers test for it.
    const code = operationError(err) ?? (isSbxError(err) ? 'invalid_path' : undefined);
    if (code === undefined) throw err;
    return code;
  }
}

/**
 * A failure deepagents has no code for (an I/O error, a sandbox gone): thrown, with host paths
 * masked, rather than reported as a code that would say something else.
 */
async function unexpected(context: ToolContext, sandbox: Sandbox, err: unknown): Promise<Error> {
  return new Error(await maskHostPaths(context, sandbox, errorMessage(err)), { cause: err });
}

/** The bounds of one call (the defaults, or smaller ones a test sets). */
export interface TransferLimits {
  readonly files: number;
  readonly bytes: number;
}

const DEFAULT_LIMITS: TransferLimits = { files: MAX_TRANSFER_FILES, bytes: MAX_TRANSFER_BYTES };

function checkCount(count: number, operation: string, limits: TransferLimits): void {
  if (count > limits.files) {
    throw new InvalidArgumentError(
      `${operation}: ${count} files in one call; at most ${limits.files}`,
    );
  }
}

/**
 * deepagents' `uploadFiles`: each file written as it is (bytes, no rewriting) where a write of
 * `write_file` may write, under the file's lock. One tool invocation for the batch: one
 * authorization decision. It is the host's write, not the model's: it needs no earlier read, and
 * a model that read the file before must read it again before it overwrites it.
 *
 * @throws InvalidArgumentError for more than `MAX_TRANSFER_FILES` files or `MAX_TRANSFER_BYTES`
 *   bytes, checked before anything is written
 */
export async function uploadFiles(
  context: ToolContext,
  files: readonly (readonly [string, Uint8Array])[],
  limits: TransferLimits = DEFAULT_LIMITS,
): Promise<FileUploadResponse[]> {
  if (!Array.isArray(files)) throw new InvalidArgumentError('uploadFiles: expected an array');
  checkCount(files.length, 'uploadFiles', limits);
  let total = 0;
  for (const entry of files) {
    const bytes: unknown = Array.isArray(entry) ? entry[1] : undefined;
    if (!(bytes instanceof Uint8Array)) {
      throw new InvalidArgumentError('uploadFiles: each file must be a [path, Uint8Array] pair');
    }
    total += bytes.byteLength;
  }
  if (total > limits.bytes) {
    throw new InvalidArgumentError(
      `uploadFiles: ${total} bytes in one call; at most ${limits.bytes}`,
    );
  }
  return runToolInvocation(context, async () => {
    const sandbox = await ensureSandboxInitialized(context);
    const responses: FileUploadResponse[] = [];
    for (const [path, bytes] of files) {
      const refused = await checkedPath(context, sandbox, path, 'write');
      if (refused) {
        responses.push({ path, error: refused });
        continue;
      }
      try {
        await fileOperationLock.runExclusive(sandbox.id, normalizeToolPath(path), () =>
          sandbox.updateFile(path, bytes),
        );
        responses.push({ path, error: null });
      } catch (err) {
        const code = operationError(err);
        if (code === undefined) throw await unexpected(context, sandbox, err);
        responses.push({ path, error: code });
      }
    }
    return responses;
  });
}

/**
 * deepagents' `downloadFiles`: each file's bytes where `read_file` may read. One tool invocation
 * for the batch.
 *
 * @throws InvalidArgumentError for more than `MAX_TRANSFER_FILES` paths, or once the files read
 *   pass `MAX_TRANSFER_BYTES` together (nothing is returned then)
 */
export async function downloadFiles(
  context: ToolContext,
  paths: readonly string[],
  limits: TransferLimits = DEFAULT_LIMITS,
): Promise<FileDownloadResponse[]> {
  if (!Array.isArray(paths)) throw new InvalidArgumentError('downloadFiles: expected an array');
  checkCount(paths.length, 'downloadFiles', limits);
  return runToolInvocation(context, async () => {
    const sandbox = await ensureSandboxInitialized(context);
    const responses: FileDownloadResponse[] = [];
    let total = 0;
    for (const path of paths) {
      const refused = await checkedPath(context, sandbox, path, 'read');
      if (refused) {
        responses.push({ path, content: null, error: refused });
        continue;
      }
      try {
        const content = await sandbox.downloadFile(path);
        total += content.byteLength;
        if (total > limits.bytes) {
          context.logger?.warn('a deepagents download passed the per-call byte limit', {
            sandboxId: sandbox.id,
            files: paths.length,
          });
          throw new InvalidArgumentError(
            `downloadFiles: more than ${limits.bytes} bytes in one call; ask for fewer files`,
          );
        }
        responses.push({ path, content, error: null });
      } catch (err) {
        if (err instanceof InvalidArgumentError) throw err;
        const code = operationError(err);
        if (code === undefined) throw await unexpected(context, sandbox, err);
        responses.push({ path, content: null, error: code });
      }
    }
    return responses;
  });
}
