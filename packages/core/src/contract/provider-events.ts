import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import type { SandboxProvider } from './sandbox-provider.js';

/**
 * How an acquire found its sandbox:
 * - `reuse`: already active in this process (same thread, same instance)
 * - `reclaim`: parked in this process's warm pool after an earlier release
 * - `discover`: running already but unknown to this process (created by a peer instance or a
 *   previous run), found through the backend and taken over
 * - `create`: a new sandbox was started
 */
export const ACQUIRE_PATHS = ['reuse', 'reclaim', 'discover', 'create'] as const;
export type AcquirePath = (typeof ACQUIRE_PATHS)[number];

/** An acquire resolved to `sandboxId` through `path`. Emitted from inside the `acquire` call. */
export interface SandboxAcquiredEvent {
  readonly type: 'acquire';
  readonly sandboxId: string;
  readonly path: AcquirePath;
}

/** Reconciliation adopted an orphaned sandbox (its owner is gone) into this instance. */
export interface SandboxAdoptedEvent {
  readonly type: 'adopt';
  readonly sandboxId: string;
}

/**
 * Reconciliation destroyed a sandbox nobody owns. `reason` is free-form; the providers of this
 * repository use `orphan` (unowned past its grace) and `duplicate` (a second sandbox for one
 * identity).
 */
export interface SandboxReapedEvent {
  readonly type: 'reap';
  readonly sandboxId: string;
  readonly reason: string;
}

/**
 * The ownership store could not answer (`operation` is the store call: `take`, `claim`, `renew`,
 * `release`, `owner`, ...). Emitted whether or not the failure reached a caller: renewal, for one,
 * deliberately keeps the sandbox and retries.
 */
export interface OwnershipErrorEvent {
  readonly type: 'ownership-error';
  readonly operation: string;
  readonly sandboxId?: string;
  readonly error: unknown;
}

export type SandboxProviderEvent =
  SandboxAcquiredEvent | SandboxAdoptedEvent | SandboxReapedEvent | OwnershipErrorEvent;

export type SandboxProviderEventListener = (event: SandboxProviderEvent) => void;

/**
 * Optional capability of a provider: report what its lifecycle did, for metrics and logs. A provider
 * implements it by adding an `onEvent` method (a `SandboxProviderEventEmitter` does the bookkeeping).
 *
 * Rules for implementers:
 * - emit synchronously, from inside the call the event belongs to (an `acquire` event from within
 *   that `acquire`): `instrumentProvider` attributes an acquire event to the call in whose async
 *   context it was emitted, and falls back to matching the sandbox id only outside any call;
 * - never let a listener's failure reach the provider's own caller (the emitter catches and logs).
 */
export interface SandboxProviderEvents {
  /** Subscribes `listener` to every later event; the returned function unsubscribes it. */
  onEvent(listener: SandboxProviderEventListener): () => void;
}

/** Current numbers of sandboxes, as an in-memory read (it is called from metric collection). */
export interface SandboxCounts {
  /** Acquired and not released. */
  readonly active: number;
  /** Released and parked for reuse (warm pool). */
  readonly warm: number;
}

/** Optional capability of a provider: expose its sandbox counts, synchronously and without I/O. */
export interface SandboxProviderCounts {
  sandboxCounts(): SandboxCounts;
}

/** True when `provider` implements the `SandboxProviderEvents` capability. */
export function hasProviderEvents(
  provider: SandboxProvider,
): provider is SandboxProvider & SandboxProviderEvents {
  return typeof (provider as Partial<SandboxProviderEvents>).onEvent === 'function';
}

/** True when `provider` implements the `SandboxProviderCounts` capability. */
export function hasSandboxCounts(
  provider: SandboxProvider,
): provider is SandboxProvider & SandboxProviderCounts {
  return typeof (provider as Partial<SandboxProviderCounts>).sandboxCounts === 'function';
}

/**
 * The bookkeeping behind `SandboxProviderEvents`, for providers to hold and delegate to:
 *
 * ```ts
 * class MyProvider extends SandboxProvider implements SandboxProviderEvents {
 *   readonly #events = new SandboxProviderEventEmitter();
 *   onEvent(listener: SandboxProviderEventListener) { return this.#events.onEvent(listener); }
 *   // in acquire: this.#events.emit({ type: 'acquire', sandboxId, path: 'create' });
 * }
 * ```
 *
 * A listener that throws is logged (warn) and skipped; the other listeners and the provider's call
 * carry on, because observing a lifecycle must never change its outcome.
 */
export class SandboxProviderEventEmitter implements SandboxProviderEvents {
  readonly #listeners = new Set<SandboxProviderEventListener>();
  readonly #logger: Logger;

  constructor(options: { logger?: Logger } = {}) {
    this.#logger = options.logger ?? silentLogger;
  }

  /** Number of subscribed listeners. */
  get size(): number {
    return this.#listeners.size;
  }

  onEvent(listener: SandboxProviderEventListener): () => void {
    // Wrapped so the same function subscribed twice is two subscriptions, each removed once.
    const entry: SandboxProviderEventListener = (event) => listener(event);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  emit(event: SandboxProviderEvent): void {
    // A copy: a listener that unsubscribes (or subscribes another) mid-emit does not skip anyone.
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (err) {
        this.#logger.warn('sandbox provider event listener failed', {
          event: event.type,
          error: err,
        });
      }
    }
  }
}
