import { constants } from 'node:fs';
import { open, readlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { PathMapping } from '@sbx/core';
import { ConfinementStartError } from './confinement-errors.js';

/** Descriptor of the first source handed to bubblewrap (3 is its `--info-fd`). */
export const FIRST_SOURCE_FD = 4;

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW;

/** One bind of the namespace, by the descriptor bubblewrap finds its source at. */
export interface MountSource {
  readonly fd: number;
  readonly destination: string;
  readonly readOnly: boolean;
}

export interface OpenedSources {
  readonly sources: readonly MountSource[];
  /** To hand to the spawn (`stdio[FIRST_SOURCE_FD + i]`), then close once it started. */
  readonly handles: readonly FileHandle[];
}

/**
 * Opens every host source of the namespace's binds in the gateway, and hands bubblewrap the
 * descriptors (`--bind-fd`), not the paths. Two reasons. The sandbox's host user (a root
 * gateway's unprivileged one) need not be able to walk to the thread's directories: the base
 * directory may be `0700`, and no other host user should see into it. And what is bound is what
 * was checked: each root is opened with `O_NOFOLLOW` and must still be the canonical directory
 * the mount table was built from (a root replaced by a link to `/` is refused, not followed),
 * with no window between the check and bubblewrap's mount.
 *
 * A mapping whose host directory is missing (a skills category nobody filled) is left out, as
 * the file tools leave it out.
 */
export async function openMountSources(
  mappings: readonly PathMapping[],
  files: Readonly<Record<string, string>>,
): Promise<OpenedSources> {
  const handles: FileHandle[] = [];
  const sources: MountSource[] = [];
  try {
    // Parents first: `/mnt/user-data` before `/mnt/user-data/workspace`.
    const ordered = [...mappings].sort((a, b) => depth(a.containerPath) - depth(b.containerPath));
    for (const mapping of ordered) {
      const handle = await openVerified(mapping.hostPath, DIRECTORY_FLAGS, mapping.containerPath);
      if (!handle) continue;
      sources.push({
        fd: FIRST_SOURCE_FD + handles.length,
        destination: mapping.containerPath,
        readOnly: mapping.readOnly,
      });
      handles.push(handle);
    }
    for (const [name, hostFile] of Object.entries(files)) {
      const handle = await openVerified(hostFile, FILE_FLAGS, `/etc/${name}`);
      if (!handle) throw new ConfinementStartError(`The sandbox's /etc/${name} is missing`);
      sources.push({
        fd: FIRST_SOURCE_FD + handles.length,
        destination: `/etc/${name}`,
        readOnly: true,
      });
      handles.push(handle);
    }
  } catch (err) {
    await Promise.all(handles.map((h) => h.close().catch(() => undefined)));
    throw err;
  }
  return { sources, handles };
}

async function openVerified(
  hostPath: string,
  flags: number,
  shown: string,
): Promise<FileHandle | undefined> {
  const expected = path.resolve(hostPath);
  let handle: FileHandle;
  try {
    handle = await open(expected, flags);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new ConfinementStartError(`The host directory of ${shown} cannot be bound`, {
      details: { reason: code === 'ELOOP' || code === 'ENOTDIR' ? 'it is a link' : String(code) },
      cause: err,
    });
  }
  const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  if (real !== expected) {
    await handle.close();
    throw new ConfinementStartError(
      `The host directory of ${shown} no longer is the one the sandbox was built from`,
      { details: { path: shown } },
    );
  }
  return handle;
}

function depth(virtualPath: string): number {
  return virtualPath.split('/').filter(Boolean).length;
}
