import { randomUUID } from 'node:crypto';
import { AbortedError, SbxError, errorMessage, type Logger } from '@sbx/core';
import type { AioApi } from './aio-api.js';
import { isHttpStatus } from './aio-http-error.js';
import type { CommandScope } from './command-scopes.js';

/** Ids of the sessions this client creates: its default session and its scopes' sessions. */
export const DEFAULT_SESSION_PREFIX = 'sbx-default-';
export const SCOPE_SESSION_PREFIX = 'sbx-scope-';

/**
 * The session cap of images that do not report it (`GET /v1/shell/sessions/stats`): the
 * `MAX_SHELL_SESSIONS` default of the 1.9.3–1.11.0 images.
 */
export const FALLBACK_MAX_SHELL_SESSIONS = 10;

/**
 * Sessions scope sessions leave free under the image's cap: one for this client's default session
 * and one for everything else using the container (another gateway, the recovery retry).
 */
export const RESERVED_SHELL_SESSIONS = 2;

const SESSION_CREATE_TIMEOUT_MS = 30_000;
const SESSION_CALL_TIMEOUT_MS = 10_000;

/** The first line of a command's output when its shell state was lost since the last one. */
export const SESSION_RESET_NOTICE =
  '[sbx] This command ran in a new shell session: the previous one was dropped (the sandbox image ' +
  'evicted it, or it was recycled for another subagent), so directory changes, exported ' +
  'variables and other shell state from earlier commands are gone.';

/**
 * The image refused a new shell session because every existing one has a running command
 * (agent-infra/sandbox#228). Typed, so the agent reads why instead of a generic HTTP failure.
 */
export class AioShellSessionLimitError extends SbxError {
  static override readonly CODE = 'AIO_SHELL_SESSION_LIMIT';
  constructor(detail: string, options: { cause?: unknown } = {}) {
    super(
      `The sandbox has no free shell session (${detail}). Wait for a running command to finish, ` +
        'or stop a long-running one, then retry.',
      options,
    );
  }
}

export interface SessionHandle {
  readonly id: string;
  /** The session is new and an earlier one of the same owner existed: its state is gone. */
  readonly reset: boolean;
}

/**
 * The shell sessions of one AioSandbox, made for the image's real semantics:
 *
 * - There is no default session in the image (a call without an id gets a one-off session that
 *   stays for an hour), so this client creates one session with an id and reuses it.
 * - The image caps sessions and evicts the least recently used idle one when full. Scope sessions
 *   are therefore bounded below the live cap (`sessions/stats`, minus `RESERVED_SHELL_SESSIONS`):
 *   past the bound, the least recently used idle scope session is recycled (its scope's next
 *   command says its state is gone); with every one busy, a new scope waits for one to free up.
 * - A session found missing (404) is recreated, and the command's output says its state is gone.
 */
export class ShellSessionManager {
  readonly #api: AioApi;
  readonly #logger: Logger;
  readonly #sandboxId: string;
  #defaultId: string | undefined;
  #defaultExisted = false;
  #cap: Promise<number> | undefined;
  /** Scope sessions being created: counted against the bound before their create is answered. */
  #creating = 0;
  readonly #waiters = new Set<() => void>();

  constructor(options: { api: AioApi; logger: Logger; sandboxId: string }) {
    this.#api = options.api;
    this.#logger = options.logger;
    this.#sandboxId = options.sandboxId;
  }

  /** The default session's id, once created. */
  get defaultSessionId(): string | undefined {
    return this.#defaultId;
  }

  /** The live cap, read once from the image; the documented default when it cannot tell. */
  maxSessions(signal?: AbortSignal): Promise<number> {
    this.#cap ??= this.#api.shellSessionStats({ signal, timeoutMs: SESSION_CALL_TIMEOUT_MS }).then(
      (stats) => stats.maxSessions ?? FALLBACK_MAX_SHELL_SESSIONS,
      (err: unknown) => {
        if (err instanceof AbortedError) {
          this.#cap = undefined;
          throw err;
        }
        this.#logger.debug('AIO image reports no shell session stats; assuming the default cap', {
          sandbox_id: this.#sandboxId,
          error: errorMessage(err),
        });
        return FALLBACK_MAX_SHELL_SESSIONS;
      },
    );
    return this.#cap;
  }

  /** Creates a session with `id`; the all-busy refusal becomes `AioShellSessionLimitError`. */
  async create(id: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.#api.createShellSession(id, { signal, timeoutMs: SESSION_CREATE_TIMEOUT_MS });
    } catch (err) {
      if (isHttpStatus(err, 400))
        throw new AioShellSessionLimitError(errorMessage(err), { cause: err });
      throw err;
    }
  }

  async deleteQuietly(id: string): Promise<void> {
    try {
      await this.#api.deleteShellSession(id, { timeoutMs: SESSION_CALL_TIMEOUT_MS });
    } catch (err) {
      // Cleanup never changes a command's result; an orphaned session expires in the image.
      this.#logger.warn('Could not delete AIO shell session', {
        sandbox_id: this.#sandboxId,
        session_id: id,
        error: errorMessage(err),
      });
    }
  }

  /**
   * Ends a command still running after its answer (a timeout does not stop it in the image), so
   * its session frees up. A session that cannot be told to stop is deleted and forgotten.
   * Returns false when the session is gone.
   */
  async stopRunning(id: string): Promise<boolean> {
    try {
      await this.#api.killShell(id, { timeoutMs: SESSION_CALL_TIMEOUT_MS });
      return true;
    } catch (err) {
      this.#logger.warn(
        'Could not stop an AIO command that outlived its limit; dropping its session',
        {
          sandbox_id: this.#sandboxId,
          session_id: id,
          error: errorMessage(err),
        },
      );
      await this.deleteQuietly(id);
      return false;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // the default session (callers hold the sandbox lock)

  async defaultSession(signal?: AbortSignal): Promise<SessionHandle> {
    if (this.#defaultId !== undefined) return { id: this.#defaultId, reset: false };
    const id = `${DEFAULT_SESSION_PREFIX}${randomUUID()}`;
    await this.create(id, signal);
    this.#defaultId = id;
    const reset = this.#defaultExisted;
    this.#defaultExisted = true;
    return { id, reset };
  }

  /**
   * Forgets the default session (gone, corrupted or stopped); the next command gets a new one,
   * with the state-loss notice unless the command itself ended the shell.
   */
  forgetDefault(options: { endedByCommand?: boolean } = {}): string | undefined {
    const id = this.#defaultId;
    this.#defaultId = undefined;
    if (options.endedByCommand) this.#defaultExisted = false;
    return id;
  }

  // ---------------------------------------------------------------------------------------------
  // scope sessions (callers hold the scope's lock)

  /** The scope's session, creating one within the bound (recycling or waiting as needed). */
  async scopeSession(
    scope: CommandScope,
    scopes: () => readonly CommandScope[],
    signal?: AbortSignal,
  ): Promise<SessionHandle> {
    if (scope.sessionId !== undefined) return { id: scope.sessionId, reset: false };
    for (;;) {
      if (signal?.aborted) throw new AbortedError(undefined, { cause: signal.reason });
      const bound = Math.max(1, (await this.maxSessions(signal)) - RESERVED_SHELL_SESSIONS);
      const holding = scopes().filter((s) => s.sessionId !== undefined);
      // Concurrent first commands of many scopes must not all pass the check before any create
      // is answered: a slot is taken before the await.
      if (holding.length + this.#creating < bound) break;
      const idle = holding
        .filter((s) => s !== scope && !s.mutex.isLocked())
        .sort((a, b) => a.lastUsedMs - b.lastUsedMs)[0];
      if (idle?.sessionId !== undefined) {
        const recycled = idle.sessionId;
        idle.sessionId = undefined;
        idle.stateLost = true;
        this.#logger.info('AIO scope session recycled for another scope (session bound reached)', {
          sandbox_id: this.#sandboxId,
          scope_id: idle.scopeId,
          bound,
        });
        await this.deleteQuietly(recycled);
        continue;
      }
      await this.#sessionFreed(signal);
    }
    const id = `${SCOPE_SESSION_PREFIX}${randomUUID()}`;
    this.#creating += 1;
    try {
      await this.create(id, signal);
      // Recorded at once, so a release waiting for this command deletes it.
      scope.sessionId = id;
    } finally {
      this.#creating -= 1;
      this.notifyFreed();
    }
    const reset = scope.stateLost;
    scope.stateLost = false;
    return { id, reset };
  }

  /** A scope's command ended or a scope session was dropped: a waiting scope may proceed. */
  notifyFreed(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }

  #sessionFreed(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#waiters.delete(wake);
        reject(new AbortedError(undefined, { cause: signal?.reason }));
      };
      const wake = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.#waiters.add(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
