import type { ProcessOutput, ProcessOutputOptions } from '../contract/sandbox-processes.js';

/** Default bytes of output one background process keeps (both streams together). */
export const DEFAULT_PROCESS_OUTPUT_BYTES = 1024 * 1024;

/** Largest single `output()` read, whatever `maxBytes` asks for. */
export const MAX_PROCESS_OUTPUT_READ_BYTES = 4 * 1024 * 1024;

export type OutputStream = 'stdout' | 'stderr';

interface Chunk {
  readonly stream: OutputStream;
  /** Cursor position of the chunk's first byte. */
  readonly start: number;
  readonly bytes: Buffer;
}

/**
 * The output a background process keeps: both streams in arrival order, at most `capacity` bytes.
 * Positions are byte offsets over everything the process ever printed, so a cursor stays valid
 * while old output is dropped: a read from before the oldest kept byte reports the gap as
 * `droppedBytes` instead of silently starting later. Memory is bounded by `capacity` plus one
 * chunk, whatever the process prints.
 */
export class OutputRing {
  readonly #capacity: number;
  readonly #chunks: Chunk[] = [];
  /** Index of the oldest live chunk; chunks before it are dropped (compacted lazily). */
  #head = 0;
  #kept = 0;
  #end = 0;

  constructor(capacity: number = DEFAULT_PROCESS_OUTPUT_BYTES) {
    if (!(Number.isInteger(capacity) && capacity > 0)) {
      throw new RangeError(`output capacity must be a positive integer, got ${capacity}`);
    }
    this.#capacity = capacity;
  }

  /** Position after the last byte ever appended. */
  get end(): number {
    return this.#end;
  }

  /** Position of the oldest byte still kept. */
  get start(): number {
    return this.#end - this.#kept;
  }

  append(stream: OutputStream, data: Buffer | string): void {
    let bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (bytes.length === 0) return;
    this.#end += bytes.length;
    if (bytes.length > this.#capacity) {
      // Only the tail of an oversized chunk can ever be read back.
      bytes = bytes.subarray(bytes.length - this.#capacity);
    }
    this.#chunks.push({ stream, start: this.#end - bytes.length, bytes });
    this.#kept += bytes.length;
    this.#evict();
  }

  #evict(): void {
    while (this.#kept > this.#capacity) {
      const oldest = this.#chunks[this.#head] as Chunk;
      const excess = this.#kept - this.#capacity;
      if (oldest.bytes.length <= excess) {
        this.#head += 1;
        this.#kept -= oldest.bytes.length;
      } else {
        this.#chunks[this.#head] = {
          stream: oldest.stream,
          start: oldest.start + excess,
          bytes: oldest.bytes.subarray(excess),
        };
        this.#kept -= excess;
      }
    }
    // Compact once the dead prefix dominates, so the array stays O(live chunks) amortised.
    if (this.#head > 64 && this.#head * 2 > this.#chunks.length) {
      this.#chunks.splice(0, this.#head);
      this.#head = 0;
    }
  }

  /** Output after `since` (default: all kept), at most `maxBytes`. */
  read(
    options: ProcessOutputOptions = {},
  ): Pick<ProcessOutput, 'text' | 'stdout' | 'stderr' | 'cursor' | 'droppedBytes' | 'more'> {
    const since = Math.min(Math.max(0, Math.floor(options.since ?? 0)), this.#end);
    const limit = Math.min(
      Math.max(1, Math.floor(options.maxBytes ?? MAX_PROCESS_OUTPUT_READ_BYTES)),
      MAX_PROCESS_OUTPUT_READ_BYTES,
    );
    const from = Math.max(since, this.start);
    const droppedBytes = from - since;
    const parts: { stream: OutputStream; bytes: Buffer }[] = [];
    let cursor = from;
    let taken = 0;
    for (let i = this.#lowerBound(from); i < this.#chunks.length && taken < limit; i++) {
      const chunk = this.#chunks[i] as Chunk;
      const offset = Math.max(0, from - chunk.start);
      const room = limit - taken;
      const piece = chunk.bytes.subarray(offset, offset + room);
      if (piece.length === 0) continue;
      parts.push({ stream: chunk.stream, bytes: piece });
      taken += piece.length;
      cursor = chunk.start + offset + piece.length;
    }
    return {
      ...decodeParts(parts),
      cursor,
      droppedBytes,
      more: cursor < this.#end,
    };
  }

  /** First live chunk that ends after `position` (binary search: chunks are in position order). */
  #lowerBound(position: number): number {
    let lo = this.#head;
    let hi = this.#chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = this.#chunks[mid] as Chunk;
      if (chunk.start + chunk.bytes.length <= position) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

function decodeParts(parts: readonly { stream: OutputStream; bytes: Buffer }[]): {
  text: string;
  stdout: string;
  stderr: string;
} {
  const all = Buffer.concat(parts.map((p) => p.bytes));
  const out = Buffer.concat(parts.filter((p) => p.stream === 'stdout').map((p) => p.bytes));
  const err = Buffer.concat(parts.filter((p) => p.stream === 'stderr').map((p) => p.bytes));
  return { text: all.toString('utf8'), stdout: out.toString('utf8'), stderr: err.toString('utf8') };
}
