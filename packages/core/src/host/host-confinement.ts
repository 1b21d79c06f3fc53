import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import { SandboxFileError, SandboxPermissionError } from '../errors/errors.js';
import { isInsideRoot } from '../paths/path-mapping-realpath.js';

export const ESCAPED_CONFINEMENT_MESSAGE =
  'Access denied: the path changed while it was opened (symbolic link swapped in)';

const HAS_PROC_FD = process.platform === 'linux';

/**
 * Where an open file descriptor really is: the kernel's own answer on Linux (`/proc/self/fd`),
 * which no rename or link swap can fake. Elsewhere `realpath` of the path it was opened by — a
 * second look that narrows the window of a swap but cannot close it (documented as best-effort).
 */
export async function openedRealPath(handle: FileHandle, openedAs: string): Promise<string> {
  if (HAS_PROC_FD) return readlink(`/proc/self/fd/${handle.fd}`);
  return realpath(openedAs);
}

export interface ConfinedOpenOptions {
  /** Canonical root the opened file must lie in (the mount it was resolved through). */
  root: string;
  /** `read`: O_RDONLY. `write`: O_WRONLY|O_CREAT (no truncation before the checks). `append`. */
  access: 'read' | 'write' | 'append';
  /** The caller's (virtual) path, for messages. */
  shown: string;
  operation: string;
  /** Extra check on the real path once known (e.g. read-only mounts for a write). */
  verify?: (realPath: string) => void | Promise<void>;
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;

function flagsFor(access: ConfinedOpenOptions['access']): number {
  switch (access) {
    case 'read':
      return constants.O_RDONLY | NOFOLLOW | NONBLOCK;
    case 'write':
      return constants.O_WRONLY | constants.O_CREAT | NOFOLLOW | NONBLOCK;
    case 'append':
      return constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | NOFOLLOW | NONBLOCK;
  }
}

/**
 * Opens `hostPath` (already resolved and checked by the mount table) and verifies what was
 * actually opened, closing the check-then-use window a path check leaves:
 *
 * - `O_NOFOLLOW`: the last component must not be a symbolic link. Resolution already followed
 *   every link, so one there now was swapped in after the check.
 * - The descriptor's real path must still lie in `root`: a directory on the way swapped for a
 *   link to elsewhere is caught here, after the open, where no further swap can matter.
 * - `O_NONBLOCK` plus a type check: a FIFO, socket or device is refused before any read could
 *   block a libuv worker (one such read per worker stalls every other tenant's file I/O).
 * - Nothing is truncated before the checks pass (`write` opens without `O_TRUNC`).
 *
 * Returns the open handle; the caller reads or writes through it and closes it.
 */
export async function openConfined(
  hostPath: string,
  options: ConfinedOpenOptions,
): Promise<FileHandle> {
  const handle = await open(hostPath, flagsFor(options.access), 0o666).catch((err: unknown) => {
    // ELOOP from O_NOFOLLOW: the last component is a link now (it was not when resolved).
    if ((err as { code?: unknown }).code === 'ELOOP') throw escaped(options, err);
    throw err;
  });
  try {
    const stats = await handle.stat();
    if (!stats.isFile() && !stats.isDirectory()) {
      throw new SandboxFileError(`Not a regular file: ${options.shown}`, {
        path: options.shown,
        operation: options.operation,
        kind: 'EINVAL',
      });
    }
    if (stats.isDirectory()) {
      throw new SandboxFileError(`Is a directory: ${options.shown}`, {
        path: options.shown,
        operation: options.operation,
        kind: 'EISDIR',
      });
    }
    const real = await openedRealPath(handle, hostPath);
    if (!isInsideRoot(real, options.root)) throw escaped(options);
    await options.verify?.(real);
    return handle;
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
}

function escaped(options: ConfinedOpenOptions, cause?: unknown): SandboxPermissionError {
  return new SandboxPermissionError(
    ESCAPED_CONFINEMENT_MESSAGE,
    { path: options.shown, operation: options.operation },
    cause === undefined ? {} : { cause },
  );
}

const DIRECTORY_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | NOFOLLOW;

/**
 * `mkdir -p` of `dir` below the canonical `root`, without ever following a link swapped in on the
 * way. On Linux each component is created and opened relative to the descriptor of its verified
 * parent (`/proc/self/fd/N/name` resolves through the open directory itself, never through a
 * path that could be re-pointed), with `O_NOFOLLOW`: a component that is a link is refused,
 * whenever it became one. Elsewhere a plain recursive `mkdir` (best-effort).
 */
export async function ensureDirectoryConfined(
  root: string,
  dir: string,
  shown: string,
): Promise<void> {
  if (!isInsideRoot(dir, root)) {
    throw new SandboxPermissionError(ESCAPED_CONFINEMENT_MESSAGE, { path: shown });
  }
  if (!HAS_PROC_FD) {
    await mkdir(dir, { recursive: true });
    return;
  }
  const parts = path.relative(root, dir).split(path.sep).filter(Boolean);
  let current = await open(root, DIRECTORY_FLAGS);
  try {
    if ((await readlink(`/proc/self/fd/${current.fd}`)) !== root) {
      throw new SandboxPermissionError(ESCAPED_CONFINEMENT_MESSAGE, { path: shown });
    }
    for (const part of parts) {
      const child = `/proc/self/fd/${current.fd}/${part}`;
      await mkdir(child).catch((err: unknown) => {
        if ((err as { code?: unknown }).code !== 'EEXIST') throw err;
      });
      const next = await open(child, DIRECTORY_FLAGS).catch((err: unknown) => {
        const code = (err as { code?: unknown }).code;
        if (code === 'ELOOP' || code === 'ENOTDIR') {
          throw new SandboxPermissionError(
            ESCAPED_CONFINEMENT_MESSAGE,
            { path: shown },
            { cause: err },
          );
        }
        throw err;
      });
      await current.close();
      current = next;
    }
  } finally {
    await current.close().catch(() => undefined);
  }
}
