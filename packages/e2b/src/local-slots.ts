/**
 * The provider's local capacity accounting, apart from the active and warm maps:
 * `reserved` (creates and adoptions in flight), `transitioning` (a VM between two maps: release,
 * reclaim) and `tombstones` (VMs whose destruction is unconfirmed; each keeps a slot until a later
 * attempt confirms it is gone, so an uncertain cleanup never frees capacity it may still use).
 *
 * Every slot remembers the epoch it was taken in. `clear()` (shutdown) zeroes the counters and
 * starts a new epoch, so an operation still in flight can finish its bookkeeping without driving a
 * counter negative or resurrecting a tombstone.
 */
export class LocalSlots {
  reserved = 0;
  transitioning = 0;
  readonly tombstones = new Map<string, { retrying: boolean }>();
  #epoch = 0;
  readonly #onFree: () => void;

  constructor(onFree: () => void) {
    this.#onFree = onFree;
  }

  get held(): number {
    return this.reserved + this.transitioning + this.tombstones.size;
  }

  reserve(): Slot {
    this.reserved += 1;
    return new Slot(this, 'reserved', this.#epoch);
  }

  beginTransition(): Slot {
    this.transitioning += 1;
    return new Slot(this, 'transitioning', this.#epoch);
  }

  isCurrent(epoch: number): boolean {
    return epoch === this.#epoch;
  }

  /** Drops a tombstone (its VM is confirmed gone or is a peer's); frees its slot. */
  clearTombstone(id: string): void {
    if (this.tombstones.delete(id)) this.#onFree();
  }

  clear(): void {
    this.#epoch += 1;
    this.reserved = 0;
    this.transitioning = 0;
    this.tombstones.clear();
    this.#onFree();
  }

  /** @internal */
  decrement(kind: 'reserved' | 'transitioning'): void {
    this[kind] = Math.max(0, this[kind] - 1);
  }

  /** @internal */
  freed(): void {
    this.#onFree();
  }
}

/** One held slot; exactly one of `commit` / `release` / `tombstone` takes effect. */
export class Slot {
  #done = false;
  constructor(
    private readonly slots: LocalSlots,
    readonly kind: 'reserved' | 'transitioning',
    private readonly epoch: number,
  ) {}

  get done(): boolean {
    return this.#done;
  }

  /** The VM is now counted elsewhere (active or warm map): the slot ends without freeing room. */
  commit(): void {
    this.#end(false);
  }

  /** The slot is given back (nothing was created, or the VM is confirmed gone). */
  release(): void {
    this.#end(true);
  }

  /** The VM's fate is unknown: the slot becomes a tombstone for `id`. */
  tombstone(id: string): void {
    if (this.#done) return;
    this.#done = true;
    if (!this.slots.isCurrent(this.epoch)) return;
    this.slots.decrement(this.kind);
    this.slots.tombstones.set(id, { retrying: false });
  }

  #end(freed: boolean): void {
    if (this.#done) return;
    this.#done = true;
    if (!this.slots.isCurrent(this.epoch)) return;
    this.slots.decrement(this.kind);
    if (freed) this.slots.freed();
  }
}
