import { availableParallelism } from 'node:os';
import { AbortedError, InvalidArgumentError, SerializerClosedError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';

/**
 * Default size of the serializer's bounded pool for provider I/O: small multiples of the CPU
 * count, capped, so a burst of acquires cannot open an unbounded number of backend connections.
 */
export const DEFAULT_SERIALIZER_LIMIT = Math.min(32, availableParallelism() + 4);

/** A part of a composite serializer key. `undefined` and `null` are the same part (absent). */
export type SerializerKeyPart = string | number | boolean | null | undefined;

/**
 * Builds an unambiguous key from parts: `serializerKey('a:b', 'c')` and `serializerKey('a', 'b:c')`
 * differ, which naive `parts.join(':')` would not guarantee.
 */
export function serializerKey(...parts: readonly SerializerKeyPart[]): string {
  return JSON.stringify(parts.map((p) => (p === undefined ? null : p)));
}

export interface SerializerWaitOptions {
  /** Abandons the wait (not a section that already runs). */
  signal?: AbortSignal;
}

/** The right to run one critical section for a key. `release()` is idempotent. */
export interface SerializerLease {
  readonly key: string;
  release(): void;
}

export interface AcquireSerializerOptions {
  /** Bound on concurrent `run()` jobs (provider I/O offloaded by providers). */
  limit?: number;
  /** Used in log lines to tell serializers apart. */
  name?: string;
  logger?: Logger;
}

/** A queued caller: in the queue exactly until grant, abort or close settles it. */
interface Waiter {
  grant(): void;
  fail(error: Error): void;
}

interface Entry {
  held: boolean;
  /** holders + waiters: the entry is reclaimed exactly when this reaches zero. */
  refs: number;
  queue: Waiter[];
}

interface Job {
  settled: boolean;
  start(): void;
  fail(error: Error): void;
}

function abortError(signal: AbortSignal): AbortedError {
  return new AbortedError(undefined, { cause: signal.reason });
}

/**
 * Per-key FIFO mutual exclusion for provider acquire/release transitions, plus a bounded pool for
 * the provider I/O those transitions perform.
 *
 * Why a table of reference-counted entries rather than a map of mutexes: keys are per user/thread,
 * so a long-lived process sees an unbounded key space. An entry lives only while someone holds or
 * waits for its key and is deleted the moment the count reaches zero, so memory is bounded by the
 * number of in-flight transitions, not by the number of threads ever seen.
 *
 * Cancellation is exactly-once by construction: a waiter is settled by the first of grant, abort or
 * close, synchronously inside that event, which takes it out of the queue; grant and close also
 * remove its abort listener in that step (an `EventTarget` skips a listener removed during its
 * dispatch), so the reference it holds is returned exactly once and the cleanup never depends on
 * the cancelled caller ever resuming.
 */
export class AcquireSerializer {
  readonly limit: number;
  readonly name: string;
  readonly #logger: Logger;
  readonly #table = new Map<string, Entry>();
  readonly #jobs: Job[] = [];
  #running = 0;
  #closed = false;

  constructor(options: AcquireSerializerOptions = {}) {
    const limit = options.limit ?? DEFAULT_SERIALIZER_LIMIT;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new InvalidArgumentError(
        `AcquireSerializer limit must be a positive integer, got ${limit}`,
      );
    }
    this.limit = limit;
    this.name = options.name ?? 'sandbox-acquire';
    this.#logger = options.logger ?? silentLogger;
  }

  /** Number of keys currently held or waited for. Zero whenever the serializer is quiescent. */
  get size(): number {
    return this.#table.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** `run()` jobs currently executing. */
  get running(): number {
    return this.#running;
  }

  /** `run()` jobs waiting for a pool slot. */
  get queued(): number {
    return this.#jobs.length;
  }

  /** Holders plus waiters of `key` (0 when the key has no entry). Diagnostics and tests. */
  refCount(key: string): number {
    return this.#table.get(key)?.refs ?? 0;
  }

  /**
   * Waits for `key` and returns its lease. Waiters are granted in arrival order. An abort before
   * the grant rejects with `AbortedError` and leaves no trace; once granted, the lease is the
   * caller's to release even if the signal fires later (`hold()` does that for you).
   */
  acquire(key: string, options: SerializerWaitOptions = {}): Promise<SerializerLease> {
    const { signal } = options;
    if (this.#closed) return Promise.reject(new SerializerClosedError());
    if (signal?.aborted) return Promise.reject(abortError(signal));

    let entry = this.#table.get(key);
    if (entry === undefined) {
      entry = { held: false, refs: 0, queue: [] };
      this.#table.set(key, entry);
    }
    entry.refs += 1;
    const owned = entry;
    if (!owned.held) {
      owned.held = true;
      return Promise.resolve(this.#lease(key, owned));
    }

    return new Promise<SerializerLease>((resolve, reject) => {
      const onAbort = (): void => {
        const at = owned.queue.indexOf(waiter);
        if (at >= 0) owned.queue.splice(at, 1);
        this.#checkin(owned);
        reject(abortError(signal as AbortSignal));
      };
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#lease(key, owned));
        },
        fail: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      owned.queue.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Runs `fn` as the only holder of `key`. The lease is released and the entry reclaimed however
   * `fn` ends. If the signal fires between the grant and the start of `fn`, the section is
   * abandoned (released at once, `AbortedError` raised) instead of running for a caller who left.
   */
  async hold<T>(
    key: string,
    fn: () => T | PromiseLike<T>,
    options: SerializerWaitOptions = {},
  ): Promise<T> {
    const lease = await this.acquire(key, options);
    try {
      if (options.signal?.aborted) throw abortError(options.signal);
      return await fn();
    } finally {
      lease.release();
    }
  }

  /**
   * Runs `fn` in the serializer's bounded pool (at most `limit` at once), taking no key lock.
   * Providers put their backend calls here so a burst of acquires cannot saturate the backend.
   * An abort while queued removes the job; an abort while it runs abandons it: the caller gets
   * `AbortedError` at once, while `fn` keeps its slot until it finishes (a half-done provider call
   * is never cut off mid-flight).
   */
  run<T>(fn: () => T | PromiseLike<T>, options: SerializerWaitOptions = {}): Promise<T> {
    const { signal } = options;
    if (this.#closed) return Promise.reject(new SerializerClosedError());
    if (signal?.aborted) return Promise.reject(abortError(signal));

    return new Promise<T>((resolve, reject) => {
      let abandoned = false;
      const onAbort = (): void => {
        if (!job.settled) {
          // Still queued: drop it; nothing ran, nothing to wait for.
          job.settled = true;
          const at = this.#jobs.indexOf(job);
          if (at >= 0) this.#jobs.splice(at, 1);
        } else {
          abandoned = true;
        }
        reject(abortError(signal as AbortSignal));
      };
      const job: Job = {
        settled: false,
        start: () => {
          this.#running += 1;
          let result: Promise<T>;
          try {
            result = Promise.resolve(fn());
          } catch (error) {
            result = Promise.reject(error);
          }
          result
            .then(
              (value) => {
                if (!abandoned) resolve(value);
              },
              (error: unknown) => {
                if (abandoned) {
                  this.#logger.warn('Abandoned serializer job failed after its caller left', {
                    serializer: this.name,
                    error,
                  });
                } else {
                  reject(error);
                }
              },
            )
            .finally(() => {
              signal?.removeEventListener('abort', onAbort);
              this.#running -= 1;
              this.#startNextJob();
            });
        },
        fail: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.#running < this.limit) {
        job.settled = true;
        job.start();
      } else {
        this.#jobs.push(job);
      }
    });
  }

  /**
   * Idempotent. Queued waiters and queued `run()` jobs reject with `SerializerClosedError`, and so
   * does every later call. Sections and jobs already running are left to finish; their exit still
   * releases and reclaims their entries.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const entry of this.#table.values()) {
      const queued = entry.queue.splice(0);
      for (const waiter of queued) {
        this.#checkin(entry);
        waiter.fail(new SerializerClosedError());
      }
    }
    for (const job of this.#jobs.splice(0)) {
      job.settled = true;
      job.fail(new SerializerClosedError());
    }
  }

  #lease(key: string, entry: Entry): SerializerLease {
    let released = false;
    return {
      key,
      release: () => {
        if (released) return;
        released = true;
        this.#unlock(key, entry);
      },
    };
  }

  #unlock(key: string, entry: Entry): void {
    entry.refs -= 1;
    // Hand the lock straight to the next waiter so a newcomer cannot barge in between (FIFO).
    // The queue only ever holds unsettled waiters: an abort or close removes the ones it settles.
    const next = entry.queue.shift();
    if (next !== undefined) {
      next.grant();
      return;
    }
    entry.held = false;
    if (entry.refs === 0) this.#table.delete(key);
  }

  /**
   * Returns a waiter's reference. A waiter only exists while someone holds the key, so this never
   * empties the entry; the holder's `#unlock` is what reclaims it.
   */
  #checkin(entry: Entry): void {
    entry.refs -= 1;
  }

  #startNextJob(): void {
    while (this.#running < this.limit && this.#jobs.length > 0) {
      // Like the waiter queues, #jobs only holds unsettled jobs (an abort removes its own).
      const job = this.#jobs.shift() as Job;
      job.settled = true;
      job.start();
    }
  }
}
