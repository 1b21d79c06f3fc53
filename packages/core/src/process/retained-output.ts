import type { OutputRing } from './output-ring.js';

/**
 * Default bytes of ended processes' output kept across every process table that shares one
 * budget (by default, all of them in this Node process): 64 MiB.
 */
export const DEFAULT_RETAINED_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * The output ended processes keep, bounded across many sandboxes: a gateway caches hundreds of
 * sandbox clients, each remembering its 32 most recent ended processes with up to 1 MiB of output
 * each, which is gigabytes outside the V8 heap if nothing bounds the sum. Each ended process's
 * output joins here; past the limit the oldest is freed (its reader then learns the output was
 * dropped). Running processes are bounded by their own buffers and the running limit.
 */
export class RetainedOutput {
  readonly #limit: number;
  /** Insertion order is age: the first entry is the oldest ended output. */
  readonly #held = new Map<OutputRing, number>();
  #total = 0;

  constructor(limitBytes: number = DEFAULT_RETAINED_OUTPUT_BYTES) {
    if (!(Number.isInteger(limitBytes) && limitBytes >= 0)) {
      throw new RangeError(
        `retained output limit must be a non-negative integer, got ${limitBytes}`,
      );
    }
    this.#limit = limitBytes;
  }

  /** Bytes of ended output kept now. */
  get retainedBytes(): number {
    return this.#total;
  }

  /** An ended process's output joins the budget; the oldest are freed while it is over. */
  keep(ring: OutputRing): void {
    this.drop(ring);
    const size = ring.keptBytes;
    this.#held.set(ring, size);
    this.#total += size;
    for (const [oldest, bytes] of this.#held) {
      if (this.#total <= this.#limit) break;
      this.#held.delete(oldest);
      this.#total -= bytes;
      oldest.clear();
    }
  }

  /** Output its table freed or forgot by itself leaves the budget. */
  drop(ring: OutputRing): void {
    const bytes = this.#held.get(ring);
    if (bytes === undefined) return;
    this.#held.delete(ring);
    this.#total -= bytes;
  }
}

/** The budget every `ProcessTable` shares unless its provider gives it one of its own. */
export const sharedRetainedOutput = new RetainedOutput();
