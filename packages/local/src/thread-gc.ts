import { opendir, lstat, rm } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, type Logger, type OrphanReapReport } from '@sbx/core';

/** Most entries one thread's walk looks at; a larger thread is kept rather than dated partly. */
export const THREAD_GC_WALK_LIMIT = 20_000;

export interface ThreadGcOptions {
  readonly baseDir: string;
  readonly maxAgeDays: number;
  readonly nowMs: number;
  /** Sandbox ids of threads this process holds: never collected. */
  readonly inUse: ReadonlySet<string>;
  readonly dryRun: boolean;
  readonly signal?: AbortSignal | undefined;
  readonly logger: Logger;
}

async function subdirectories(dir: string): Promise<string[]> {
  try {
    const names: string[] = [];
    for await (const entry of await opendir(dir)) {
      if (entry.isDirectory()) names.push(entry.name);
    }
    return names.sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * The newest modification time anywhere in `dir` (links themselves, never their targets), or
 * `undefined` when the tree has more than `limit` entries.
 */
async function newestChange(dir: string, limit: number): Promise<number | undefined> {
  let newest = (await lstat(dir)).mtimeMs;
  let seen = 0;
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop() as string;
    for await (const entry of await opendir(current)) {
      seen += 1;
      if (seen > limit) return undefined;
      const full = path.join(current, entry.name);
      const stats = await lstat(full);
      if (stats.mtimeMs > newest) newest = stats.mtimeMs;
      if (entry.isDirectory()) pending.push(full);
    }
  }
  return newest;
}

/**
 * Thread directories (`<base>/users/<u>/threads/<t>`) nothing changed in for `maxAgeDays`: the
 * local provider's orphans, since a thread directory has no owner but its files. A thread this
 * process holds is kept, and so is one too large to date within the walk limit.
 */
export async function collectIdleThreads(options: ThreadGcOptions): Promise<OrphanReapReport> {
  const reaped: string[] = [];
  const kept: { id: string; reason: string }[] = [];
  const cutoff = options.nowMs - options.maxAgeDays * 86_400_000;
  const usersDir = path.join(options.baseDir, 'users');
  for (const userId of await subdirectories(usersDir)) {
    const threadsDir = path.join(usersDir, userId, 'threads');
    for (const threadId of await subdirectories(threadsDir)) {
      options.signal?.throwIfAborted();
      const id = `local:${userId}:${threadId}`;
      const dir = path.join(threadsDir, threadId);
      if (options.inUse.has(id)) {
        kept.push({ id, reason: 'in use by this process' });
        continue;
      }
      const newest = await newestChange(dir, THREAD_GC_WALK_LIMIT);
      if (newest === undefined) {
        kept.push({ id, reason: `more than ${THREAD_GC_WALK_LIMIT} entries; not dated` });
      } else if (newest > cutoff) {
        kept.push({ id, reason: `changed within the last ${options.maxAgeDays} days` });
      } else if (options.dryRun) {
        reaped.push(id);
      } else {
        try {
          // rm never follows links: a link inside the thread is removed, not its target.
          await rm(dir, { recursive: true, force: true });
          reaped.push(id);
        } catch (err) {
          options.logger.warn('Removing an idle thread directory failed', {
            sandboxId: id,
            error: errorMessage(err),
          });
          kept.push({ id, reason: `removal failed: ${errorMessage(err)}` });
        }
      }
    }
  }
  return { reaped, kept };
}
