import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ensureDirectoryConfined, normalizeVirtualRoot, openConfined } from '@sbx/core/internal';
import type { PathMappingTable } from '@sbx/core';
import { toFileError } from './file-errors.js';

export type FileAccess = 'read' | 'write' | 'append';

/**
 * Resolves `filePath` through the mount table and opens it confined (`openConfined`): the
 * descriptor is verified after the open, so a link swapped in between the check and the use is
 * refused instead of followed, and special files are refused before any read can block. Writes
 * create missing parent directories first, through verified directory descriptors.
 */
export async function openSandboxFile(
  table: PathMappingTable,
  filePath: string,
  access: FileAccess,
  operation: string,
): Promise<{ handle: FileHandle; hostPath: string; root: string }> {
  const resolved = await table.resolve(filePath, access === 'read' ? 'read' : 'write');
  // The unconfined generic sandbox serves host paths: only special files are refused there.
  const root = resolved.root ?? '/';
  try {
    if (access !== 'read') {
      await ensureDirectoryConfined(root, path.dirname(resolved.hostPath), filePath);
    }
    const handle = await openConfined(resolved.hostPath, {
      root,
      access,
      shown: filePath,
      operation,
      ...(access === 'read'
        ? {}
        : { verify: (real: string) => table.assertWritableAt(real, filePath) }),
    });
    return { handle, hostPath: resolved.hostPath, root };
  } catch (err) {
    throw toFileError(err, filePath, operation);
  }
}

/**
 * In a confined table, a directory no mount covers but that holds mounts (`/mnt/skills` over its
 * categories) lists those mounts and nothing else: it exists only as their parent.
 */
export function mountsBelow(table: PathMappingTable, dirPath: string): string[] | undefined {
  if (!table.confined || table.match(dirPath)) return undefined;
  const parent = normalizeVirtualRoot(dirPath);
  const prefix = parent === '/' ? '/' : `${parent}/`;
  const children = new Set<string>();
  for (const mapping of table.mappings) {
    if (!mapping.containerPath.startsWith(prefix)) continue;
    const child = mapping.containerPath.slice(prefix.length).split('/')[0];
    if (child) children.add(`${prefix}${child}/`);
  }
  return children.size > 0 ? [...children].sort() : undefined;
}
