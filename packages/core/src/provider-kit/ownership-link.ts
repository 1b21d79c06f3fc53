import type { Clock } from '../async/clock.js';
import { SandboxRuntimeError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import type { SandboxProviderEvent } from '../contract/provider-events.js';
import type { OwnershipStore } from '../ownership/ownership-store.js';
import { errorMessage } from '../errors/error-inspection.js';
import { OwnershipClient } from './ownership-client.js';

export interface OwnershipLinkOptions {
  /** The store, which may still be connecting (Redis). */
  readonly store: Promise<OwnershipStore>;
  /** The provider built the store (and closes it), as opposed to being handed one. */
  readonly ownsStore: boolean;
  readonly renewalIntervalMs: number;
  readonly emit?: ((event: SandboxProviderEvent) => void) | undefined;
  readonly clock?: Clock | undefined;
  readonly logger?: Logger | undefined;
  /** Names the provider in the log line of a store that failed to open. */
  readonly name: string;
}

/**
 * A provider's connection to its ownership store: the store may take a while to open (Redis), and
 * every path that needs the ownership client must wait for it, then use one client. A store that
 * failed to open is logged once here; `ready()` rethrows that failure to each caller, so an
 * acquire fails with the real cause instead of an internal error.
 */
export class OwnershipLink {
  readonly #store: Promise<OwnershipStore>;
  readonly #ownsStore: boolean;
  readonly #settled: Promise<void>;
  #client: OwnershipClient | undefined;

  constructor(options: OwnershipLinkOptions) {
    const logger = options.logger ?? silentLogger;
    this.#store = options.store;
    this.#ownsStore = options.ownsStore;
    this.#settled = options.store.then(
      (store) => {
        this.#client = new OwnershipClient({
          store,
          renewalIntervalMs: options.renewalIntervalMs,
          emit: options.emit,
          clock: options.clock,
          logger,
        });
      },
      (error: unknown) => {
        logger.error(`${options.name}: the ownership store could not be created`, {
          error: errorMessage(error),
        });
      },
    );
  }

  /** Resolves when the store has opened or failed; never rejects. */
  settled(): Promise<void> {
    return this.#settled;
  }

  /** The client once the store is open; the store's own failure otherwise. */
  async ready(): Promise<OwnershipClient> {
    await this.#store;
    await this.#settled;
    return this.client;
  }

  /** The client; an internal error before the store is open (callers await `ready()` first). */
  get client(): OwnershipClient {
    if (this.#client === undefined) {
      throw new SandboxRuntimeError('internal: ownership store used before it was ready');
    }
    return this.#client;
  }

  get clientIfReady(): OwnershipClient | undefined {
    return this.#client;
  }

  /** The open store, or undefined when it failed to open. */
  async storeIfOpen(): Promise<OwnershipStore | undefined> {
    await this.#settled;
    return this.#client?.store;
  }

  /** Closes the store if the provider built it; a failure is logged. */
  async close(logger: Logger): Promise<void> {
    const store = await this.storeIfOpen();
    if (store === undefined || !this.#ownsStore) return;
    try {
      await store.close();
    } catch (err) {
      logger.warn('Could not close the ownership store', { error: errorMessage(err) });
    }
  }
}
