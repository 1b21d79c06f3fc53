import { constants } from 'node:fs';
import { open, readlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { SandboxOwner } from './sandbox-owner.js';

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * When a root gateway confines commands as an unprivileged user, what its file tools create in
 * the thread's writable directories would be root's: the sandbox could read a file the agent
 * wrote with `write_file` but not append to it with `>>`. So what the tools create there is
 * handed to the sandbox's user, through descriptors only (a path could be re-pointed by a link
 * the sandbox swapped in; a descriptor cannot).
 */
export async function handFileToOwner(handle: FileHandle, owner: SandboxOwner): Promise<void> {
  const info = await handle.stat();
  if (info.uid !== owner.uid || info.gid !== owner.gid) await handle.chown(owner.uid, owner.gid);
}

/**
 * The directories between `root` (a writable mount root, already the owner's) and `dir` that the
 * gateway's user owns, handed to `owner`: each opened relative to its verified parent's
 * descriptor with `O_NOFOLLOW`, so a component swapped for a link is refused, never followed.
 * Directories someone else owns (the sandbox's own, or an upload's) are left alone.
 */
export async function handDirectoriesToOwner(
  root: string,
  dir: string,
  owner: SandboxOwner,
): Promise<void> {
  const relative = path.relative(root, dir);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return;
  const gateway = process.getuid?.();
  let current = await open(root, DIRECTORY_FLAGS);
  try {
    if ((await readlink(`/proc/self/fd/${current.fd}`)) !== root) return;
    for (const part of relative.split(path.sep).filter(Boolean)) {
      const next = await open(`/proc/self/fd/${current.fd}/${part}`, DIRECTORY_FLAGS);
      await current.close();
      current = next;
      const info = await current.stat();
      if (info.uid === gateway) await current.chown(owner.uid, owner.gid);
    }
  } finally {
    await current.close();
  }
}
