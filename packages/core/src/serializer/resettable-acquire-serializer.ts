import { AcquireSerializer } from './acquire-serializer.js';
import type { SerializerWaitOptions } from './acquire-serializer.js';
import { SerializerClosedError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';

export interface ResettableAcquireSerializerOptions {
  /** Names every lock table in log lines, e.g. `boxlite-acquire`. */
  readonly name: string;
  readonly logger?: Logger;
  /**
   * The error a caller gets once `close()` ran: the owner's own "shut down" error, so callers
   * see the provider's state rather than a lock table's. `cause` is the table's rejection.
   */
  readonly closedError: (cause: SerializerClosedError) => Error;
}

/**
 * The per-id lock table of a provider whose `reset()` must not tear anything down.
 *
 * `reset()` swaps in a fresh `AcquireSerializer` and closes the old one, so a transition stuck on
 * the old table cannot block callers forever. A caller that was only *queued* on the closed table
 * has not started its work, so it queues again on the new table instead of failing; a section
 * that already runs finishes on the old table. After `close()` (the provider's shutdown) every
 * caller, queued or new, gets `closedError`.
 */
export class ResettableAcquireSerializer {
  readonly #options: ResettableAcquireSerializerOptions;
  #current: AcquireSerializer;
  #closed = false;

  constructor(options: ResettableAcquireSerializerOptions) {
    this.#options = options;
    this.#current = this.#fresh();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Runs `fn` as the only holder of `key` on the current table (see `AcquireSerializer.hold`). */
  async hold<T>(
    key: string,
    fn: () => T | PromiseLike<T>,
    options: SerializerWaitOptions = {},
  ): Promise<T> {
    // Only a caller still queued may queue again: once `fn` started, its own failure (even a
    // `SerializerClosedError` from something it called) is final, or the section would run twice.
    let started = false;
    const section = () => {
      started = true;
      return fn();
    };
    for (;;) {
      const table = this.#current;
      try {
        return await table.hold(key, section, options);
      } catch (error) {
        if (started || !(error instanceof SerializerClosedError)) throw error;
        if (this.#closed) throw this.#options.closedError(error);
        // Closed by something other than a reset: nothing to queue again on.
        if (table === this.#current) throw error;
      }
    }
  }

  /**
   * Starts a fresh lock table and closes the old one: its waiters move to the new table, its
   * running sections finish where they are. A no-op once closed: a shut-down owner stays shut.
   */
  reset(): void {
    if (this.#closed) return;
    const old = this.#current;
    this.#current = this.#fresh();
    old.close();
  }

  /** Closes the current table for good; idempotent. */
  close(): void {
    this.#closed = true;
    this.#current.close();
  }

  #fresh(): AcquireSerializer {
    return new AcquireSerializer({ name: this.#options.name, logger: this.#options.logger });
  }
}
