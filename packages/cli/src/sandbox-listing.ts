import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { canListSandboxes } from '@sbx/core';
import type { ListSandboxesOptions, SandboxProvider, SandboxSummary } from '@sbx/core';
import { isHostDirectoryProvider } from './host-directory-provider.js';

async function subdirectories(dir: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return [];
    throw err;
  }
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/**
 * The thread sandboxes of a host-directory provider: every `<base>/users/<u>/threads/<t>` directory.
 * Directories outlive the provider's in-memory cache, so this shows every thread ever acquired
 * under this data directory, not only those of the current process.
 */
export async function listHostThreadSandboxes(baseDir: string): Promise<SandboxSummary[]> {
  const out: SandboxSummary[] = [];
  const usersDir = path.join(baseDir, 'users');
  for (const userId of await subdirectories(usersDir)) {
    const threadsDir = path.join(usersDir, userId, 'threads');
    for (const threadId of await subdirectories(threadsDir)) {
      const location = path.join(threadsDir, threadId);
      // The workspace changes with every write; the thread directory itself rarely does.
      const info = await stat(path.join(location, 'user-data', 'workspace')).catch(() =>
        stat(location),
      );
      out.push({
        id: `local:${userId}:${threadId}`,
        userId,
        threadId,
        state: 'on disk',
        updatedAt: info.mtime.toISOString(),
        location,
      });
    }
  }
  return out;
}

/**
 * The provider's sandboxes, or `undefined` when it offers no way to list them. A provider's own
 * `listSandboxes` wins over the host-directory fallback.
 */
export async function listSandboxesOf(
  provider: SandboxProvider,
  options: ListSandboxesOptions = {},
): Promise<readonly SandboxSummary[] | undefined> {
  if (canListSandboxes(provider)) return provider.listSandboxes(options);
  if (isHostDirectoryProvider(provider)) return listHostThreadSandboxes(provider.baseDir);
  return undefined;
}
