/**
 * Per-key FIFO mutual exclusion for the adapter's read-modify-write file updates (append is a read
 * followed by a full write over the file API, so two appends to one file must not interleave).
 * An entry exists only while someone holds or waits for its key, so the table stays as small as
 * the number of writes in flight.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();

  /** Keys currently held or waited for. */
  get size(): number {
    return this.#tails.size;
  }

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      // Only the last in line removes the entry; a later arrival has replaced the tail already.
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
