import { chmod, lstat } from 'node:fs/promises';
import path from 'node:path';
import { ConfinementStartError } from './confinement-errors.js';

/**
 * When a root gateway confines commands as an unprivileged host user, bubblewrap (running as
 * that user) resolves each bound directory's path itself, so it needs search permission on every
 * directory above it. Below the base directory those are the provider's own: each gets the
 * others' search bit (`o+x`, never read: no listing, no guessing of user or thread ids). Above
 * the base directory they are the operator's, and one that cannot be searched is reported with
 * its fix rather than changed.
 *
 * Links are never followed: a component that is one is left as it is (and the bind of what it
 * leads to is refused by the descriptor check of `openMountSources`).
 */
export async function grantTraversal(baseDir: string, dirs: readonly string[]): Promise<void> {
  await assertSearchableAbove(baseDir);
  const done = new Set<string>();
  for (const dir of dirs) {
    const relative = path.relative(baseDir, dir);
    if (relative.startsWith('..') || path.isAbsolute(relative)) continue;
    let current = baseDir;
    const chain = [current];
    for (const part of relative.split(path.sep).filter(Boolean)) {
      current = path.join(current, part);
      chain.push(current);
    }
    // The directory itself is bound, not searched; only the ones above it need the bit.
    chain.pop();
    for (const step of chain) {
      if (done.has(step)) continue;
      done.add(step);
      const info = await lstat(step).catch(() => undefined);
      if (!info?.isDirectory()) continue;
      if ((info.mode & 0o001) === 0) await chmod(step, (info.mode & 0o7777) | 0o001);
    }
  }
}

const searchable = new Map<string, Promise<void>>();

async function assertSearchableAbove(baseDir: string): Promise<void> {
  let pending = searchable.get(baseDir);
  if (!pending) {
    pending = (async () => {
      for (let dir = path.dirname(baseDir); ; dir = path.dirname(dir)) {
        const info = await lstat(dir);
        if (info.isDirectory() && (info.mode & 0o001) === 0) {
          throw new ConfinementStartError(
            `The sandbox user cannot reach the data directory: ${dir} is not searchable by others`,
            {
              details: {
                fix: `chmod o+x ${dir}, or set sandbox.base_dir below a directory others can search`,
              },
            },
          );
        }
        if (dir === path.dirname(dir)) return;
      }
    })();
    pending.catch(() => searchable.delete(baseDir));
    searchable.set(baseDir, pending);
  }
  return pending;
}
