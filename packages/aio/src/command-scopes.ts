import { SandboxRuntimeError } from '@sbx/core';
import { Mutex } from 'async-mutex';
import { withLock } from './abortable-lock.js';

/** One command scope: its own lock and, once used, its own server-side shell session. */
export interface CommandScope {
  readonly scopeId: string;
  readonly mutex: Mutex;
  /** The scope's shell session; undefined until the first command, or after it was dropped. */
  sessionId: string | undefined;
  /** When the scope last finished a command (for recycling the least recently used session). */
  lastUsedMs: number;
  /** Its session was dropped while it had state: its next command says so. */
  stateLost: boolean;
}

export const SCOPE_NO_LONGER_ACTIVE_MESSAGE = 'sandbox command scope is no longer active';

/**
 * The scope registry of one sandbox. Commands of one scope run one at a time, in call order (the
 * scope's mutex is FIFO); different scopes run concurrently.
 *
 * The race it closes: a command queued behind a running one while the scope is released (or the
 * sandbox closed). The release removes the entry and cleans its session once the running command
 * is done; without a check, the queued command would then run, find no session, and create a new
 * one that nobody ever deletes. So after every wait for the scope lock the command re-validates
 * that the sandbox is open and that the registry still maps the scope to the very entry it
 * queued on, and fails otherwise.
 */
export class CommandScopeRegistry {
  private readonly entries = new Map<string, CommandScope>();
  private closed = false;

  get size(): number {
    return this.entries.size;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  has(scopeId: string): boolean {
    return this.entries.has(scopeId);
  }

  /** The live scopes (a snapshot). */
  all(): CommandScope[] {
    return [...this.entries.values()];
  }

  /** Runs `fn` as the scope's next command, holding its lock. */
  run<T>(
    scopeId: string,
    signal: AbortSignal | undefined,
    fn: (scope: CommandScope) => Promise<T>,
  ): Promise<T> {
    if (this.closed) throw new SandboxRuntimeError(SCOPE_NO_LONGER_ACTIVE_MESSAGE);
    let entry = this.entries.get(scopeId);
    if (!entry) {
      entry = {
        scopeId,
        mutex: new Mutex(),
        sessionId: undefined,
        lastUsedMs: 0,
        stateLost: false,
      };
      this.entries.set(scopeId, entry);
    }
    const mine = entry;
    return withLock(mine.mutex, signal, async () => {
      if (this.closed || this.entries.get(scopeId) !== mine) {
        throw new SandboxRuntimeError(SCOPE_NO_LONGER_ACTIVE_MESSAGE, {
          details: { scope_id: scopeId },
        });
      }
      return fn(mine);
    });
  }

  /**
   * Removes the scope, then, after any command of it still running, calls `cleanup` with it (to
   * delete its session). A scope that does not exist is a no-op.
   */
  async release(scopeId: string, cleanup: (scope: CommandScope) => Promise<void>): Promise<void> {
    const entry = this.entries.get(scopeId);
    if (!entry) return;
    this.entries.delete(scopeId);
    await entry.mutex.runExclusive(() => cleanup(entry));
  }

  /** Refuses new commands from now on and releases every scope. */
  async closeAll(cleanup: (scope: CommandScope) => Promise<void>): Promise<void> {
    this.closed = true;
    const ids = [...this.entries.keys()];
    await Promise.all(ids.map((id) => this.release(id, cleanup)));
  }
}
