import type { Mutex } from 'async-mutex';
import type * as AsyncMutexModule from 'async-mutex';
import { lazyModule } from '../modules/lazy-module.js';

/** Loaded on the first file edit, not with `@sbx/core`. */
const asyncMutex = lazyModule<typeof AsyncMutexModule>('async-mutex');

interface LockEntry {
  readonly mutex: Mutex;
  /** Callers holding or waiting for the mutex; the entry is dropped when this reaches zero. */
  refs: number;
}

/**
 * One non-reentrant mutex per `(sandbox id, path)`, held around a file tool's read-check-write so two
 * edits of one file inside one sandbox cannot interleave (a lost update), while the same virtual
 * path in two different sandboxes never contends. Entries are reference-counted and removed when the
 * last holder or waiter leaves, so touching many distinct paths does not grow the table.
 */
export class FileOperationLock {
  readonly #entries = new Map<string, LockEntry>();

  /** Number of live entries (keys with a holder or a waiter). */
  get size(): number {
    return this.#entries.size;
  }

  /** True while some caller holds or waits for the lock of this key. */
  isLocked(sandboxId: string, path: string): boolean {
    return this.#entries.get(FileOperationLock.key(sandboxId, path))?.mutex.isLocked() ?? false;
  }

  async runExclusive<T>(sandboxId: string, path: string, fn: () => Promise<T>): Promise<T> {
    const key = FileOperationLock.key(sandboxId, path);
    let entry = this.#entries.get(key);
    if (!entry) {
      entry = { mutex: new (asyncMutex().Mutex)(), refs: 0 };
      this.#entries.set(key, entry);
    }
    entry.refs += 1;
    const held = entry;
    try {
      return await held.mutex.runExclusive(fn);
    } finally {
      held.refs -= 1;
      if (held.refs === 0 && this.#entries.get(key) === held) this.#entries.delete(key);
    }
  }

  private static key(sandboxId: string, path: string): string {
    // NUL cannot occur in a sandbox id or a path, so the pair is unambiguous.
    return `${sandboxId}\u0000${path}`;
  }
}

/** The process-wide table used by the file tools. */
export const fileOperationLock = new FileOperationLock();
