/**
 * First sightings of untracked sandboxes, by id: the memory a grace needs across passes. Pruned
 * against a complete listing so it stays proportional to what the backend runs, not to what it
 * has ever run.
 */
export class Sightings {
  readonly #first = new Map<string, number>();

  get(id: string): number | undefined {
    return this.#first.get(id);
  }

  /** The first sighting, recorded now if there was none. */
  observe(id: string, now: number): number {
    const first = this.#first.get(id);
    if (first !== undefined) return first;
    this.#first.set(id, now);
    return now;
  }

  /** Keeps `at` as the sighting, or forgets it for undefined. */
  set(id: string, at: number | undefined): void {
    if (at === undefined) this.#first.delete(id);
    else this.#first.set(id, at);
  }

  forget(id: string): void {
    this.#first.delete(id);
  }

  /** Drops the sightings of ids a complete listing no longer shows. */
  keepOnly(listed: Iterable<string>): void {
    const present = new Set(listed);
    for (const id of [...this.#first.keys()]) if (!present.has(id)) this.#first.delete(id);
  }

  clear(): void {
    this.#first.clear();
  }

  get size(): number {
    return this.#first.size;
  }
}
