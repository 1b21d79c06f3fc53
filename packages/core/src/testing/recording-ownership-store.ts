import { OwnershipBackendError } from '../errors/errors.js';
import type { ClaimOptions, OwnershipStore } from '../ownership/ownership-store.js';

export type StoreWrite = 'take' | 'claim' | 'claim(forDestroy)' | 'renew' | 'release';

/**
 * An ownership store that records every write it passes on to `inner` and, while `broken`,
 * answers nothing (every call rejects with `OwnershipBackendError`): the inspection suite's view
 * of what a provider's reaping wrote, and its way to make the store fail.
 */
export class RecordingOwnershipStore implements OwnershipStore {
  readonly supportsCrossProcess = true;
  readonly writes: StoreWrite[] = [];
  broken = false;

  constructor(private readonly inner: OwnershipStore) {}

  get ownerId(): string {
    return this.inner.ownerId;
  }

  #gate<T>(write: StoreWrite | undefined, run: () => Promise<T>): Promise<T> {
    if (write !== undefined) this.writes.push(write);
    if (this.broken) {
      return Promise.reject(new OwnershipBackendError('the ownership store cannot answer'));
    }
    return run();
  }

  take(id: string) {
    return this.#gate('take', () => this.inner.take(id));
  }
  claim(id: string, options?: ClaimOptions) {
    const write = options?.forDestroy ? 'claim(forDestroy)' : 'claim';
    return this.#gate(write, () => this.inner.claim(id, options));
  }
  renew(id: string) {
    return this.#gate('renew', () => this.inner.renew(id));
  }
  release(id: string) {
    return this.#gate('release', () => this.inner.release(id));
  }
  owner(id: string) {
    return this.#gate(undefined, () => this.inner.owner(id));
  }
  close() {
    return this.inner.close();
  }
}
