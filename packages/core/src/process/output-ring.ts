import { StringDecoder } from 'node:string_decoder';
import type { ProcessOutput, ProcessOutputOptions } from '../contract/sandbox-processes.js';
import { MAX_HELD_LINE_CHARS } from './stream-rewriter.js';

/** Default bytes of output one background process keeps (both streams together). */
export const DEFAULT_PROCESS_OUTPUT_BYTES = 1024 * 1024;

/** Largest single `output()` read, whatever `maxBytes` asks for. */
export const MAX_PROCESS_OUTPUT_READ_BYTES = 4 * 1024 * 1024;

/** Raw bytes one slice of `settle()` decodes and rewrites before it hands the loop back. */
const SETTLE_SLICE_BYTES = 64 * 1024;

export type OutputStream = 'stdout' | 'stderr';

export interface OutputRingOptions {
  /** Bytes kept, both streams together, raw and shown alike. Default 1 MiB. */
  readonly capacity?: number;
  /**
   * How output text is shown (host paths masked, secrets redacted). It needs a path or a secret
   * whole, so it is applied a line at a time per stream, as `StreamRewriter` does; and it is
   * applied lazily, when output is read, so bytes dropped before anyone reads them are never
   * decoded nor rewritten.
   */
  readonly rewrite?: (text: string) => string;
  /** Hands the loop back between slices of `settle()`. Default: the next `setImmediate`. */
  readonly yieldTurn?: () => Promise<void>;
}

interface Chunk {
  readonly stream: OutputStream;
  /** Cursor position of the chunk's first byte. */
  readonly start: number;
  readonly bytes: Buffer;
}

interface RawChunk {
  readonly stream: OutputStream;
  readonly bytes: Buffer;
}

/** Where one stream's line assembly stands (rewriting rings only). */
interface LineState {
  decoder: StringDecoder;
  /** Text after the stream's last line end, waiting for the rest of its line. */
  held: string;
  /** Output of this stream was dropped mid-line: its text up to the next line end goes too. */
  skipping: boolean;
}

const nextImmediate = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The output a background process keeps: both streams in arrival order, at most `capacity` bytes.
 * Positions are byte offsets over everything shown, so a cursor stays valid while old output is
 * dropped: a read from before the oldest kept byte reports the gap as `droppedBytes` instead of
 * silently starting later. Memory is bounded by `capacity` plus one chunk, whatever the process
 * prints.
 *
 * Appending never decodes: bytes are kept as they come, and dropped as they come when the ring is
 * full, so a flood costs a copy-free push per chunk. With a `rewrite`, raw bytes wait until a read
 * (`settle()`), which decodes and rewrites what is still kept, a slice per turn of the loop.
 */
export class OutputRing {
  readonly #capacity: number;
  readonly #rewrite: ((text: string) => string) | undefined;
  readonly #yieldTurn: () => Promise<void>;
  readonly #chunks: Chunk[] = [];
  /** Index of the oldest live chunk; chunks before it are dropped (compacted lazily). */
  #head = 0;
  /** Bytes of the live shown chunks. */
  #kept = 0;
  #end = 0;
  readonly #raw: RawChunk[] = [];
  #rawHead = 0;
  #rawBytes = 0;
  /** Raw chunks ever appended, and those settled or dropped: a settle stops at its own target. */
  #rawIn = 0;
  #rawGone = 0;
  readonly #lines: Record<OutputStream, LineState> | undefined;
  #ended = false;
  #settling: Promise<void> | undefined;

  constructor(options: number | OutputRingOptions = {}) {
    const {
      capacity = DEFAULT_PROCESS_OUTPUT_BYTES,
      rewrite,
      yieldTurn,
    } = typeof options === 'number' ? { capacity: options } : options;
    if (!(Number.isInteger(capacity) && capacity > 0)) {
      throw new RangeError(`output capacity must be a positive integer, got ${capacity}`);
    }
    this.#capacity = capacity;
    this.#rewrite = rewrite;
    this.#yieldTurn = yieldTurn ?? nextImmediate;
    this.#lines = rewrite ? { stdout: lineState(), stderr: lineState() } : undefined;
  }

  /** Position after the last byte shown (or dropped). */
  get end(): number {
    return this.#end;
  }

  /** Position of the oldest byte still kept (the end when nothing is). */
  get start(): number {
    return this.#kept > 0 ? (this.#chunks[this.#head] as Chunk).start : this.#end;
  }

  /** Bytes this ring holds now: shown, raw and held together. */
  get keptBytes(): number {
    return this.#kept + this.#rawBytes + this.#heldChars();
  }

  append(stream: OutputStream, data: Buffer | Uint8Array | string): void {
    // A chunk larger than the ring is pushed whole: eviction then keeps only its tail, which is
    // all that can be read back (it holds no more than the caller already does).
    const bytes = toOwnBuffer(data);
    if (bytes.length === 0) return;
    if (this.#lines === undefined) {
      this.#chunks.push({ stream, start: this.#end, bytes });
      this.#end += bytes.length;
      this.#kept += bytes.length;
      this.#evict();
      return;
    }
    this.#raw.push({ stream, bytes });
    this.#rawIn += 1;
    this.#rawBytes += bytes.length;
    this.#evict();
  }

  /**
   * The process has ended: nothing more is appended, and a line still waiting for its end is
   * shown as it is at the next settle.
   */
  seal(): void {
    this.#ended = true;
  }

  /**
   * Frees everything kept (the process's output is no longer wanted: its sandbox was released,
   * or a budget needed the room). Positions stay: a later read reports it all as dropped.
   */
  clear(): void {
    // Shown bytes have their positions already; raw and held ones get theirs as a gap.
    let dropped = this.#rawBytes;
    const cut = new Set(this.#raw.slice(this.#rawHead).map((chunk) => chunk.stream));
    this.#chunks.length = 0;
    this.#head = 0;
    this.#kept = 0;
    this.#rawGone += this.#raw.length - this.#rawHead;
    this.#raw.length = 0;
    this.#rawHead = 0;
    this.#rawBytes = 0;
    if (this.#lines) {
      for (const stream of ['stdout', 'stderr'] as const) {
        const state = this.#lines[stream];
        if (state.held !== '') cut.add(stream);
        dropped += Buffer.byteLength(state.held);
        state.held = '';
        state.decoder = new StringDecoder('utf8');
        // A line cut here may go on in what the process prints next.
        state.skipping ||= cut.has(stream) && !this.#ended;
      }
    }
    this.#end += dropped;
  }

  /**
   * Decodes and rewrites the raw output appended so far, a slice per turn of the loop (a no-op
   * without a `rewrite`). Concurrent calls share one run; output appended meanwhile waits for
   * the next call, so a flood cannot keep one settle going.
   */
  settle(): Promise<void> {
    if (this.#lines === undefined) return Promise.resolve();
    if (this.#settling === undefined) {
      this.#settling = this.#settleAll().finally(() => {
        this.#settling = undefined;
      });
    }
    return this.#settling;
  }

  async #settleAll(): Promise<void> {
    const target = this.#rawIn;
    while (this.#rawGone < target) {
      this.#settleSlice(target);
      if (this.#rawGone < target) await this.#yieldTurn();
    }
    if (this.#ended) this.#flush();
  }

  #settleSlice(target: number): void {
    let budget = SETTLE_SLICE_BYTES;
    while (budget > 0 && this.#rawGone < target && this.#rawHead < this.#raw.length) {
      const chunk = this.#raw[this.#rawHead] as RawChunk;
      this.#rawHead += 1;
      this.#rawGone += 1;
      this.#rawBytes -= chunk.bytes.length;
      budget -= chunk.bytes.length;
      const state = (this.#lines as Record<OutputStream, LineState>)[chunk.stream];
      this.#feed(chunk.stream, state, state.decoder.write(chunk.bytes));
    }
    this.#compactRaw();
  }

  /** Line assembly of one stream: whole lines are rewritten and shown, the rest waits. */
  #feed(stream: OutputStream, state: LineState, text: string): void {
    if (state.skipping) {
      const lineEnd = text.indexOf('\n');
      const skipped = lineEnd === -1 ? text : text.slice(0, lineEnd + 1);
      this.#end += Buffer.byteLength(skipped);
      if (lineEnd === -1) return;
      state.skipping = false;
      text = text.slice(lineEnd + 1);
    }
    const joined = state.held + text;
    const cut = joined.lastIndexOf('\n');
    if (cut === -1 && joined.length <= MAX_HELD_LINE_CHARS) {
      state.held = joined;
      this.#evict();
      return;
    }
    const upTo = cut === -1 ? joined.length : cut + 1;
    state.held = joined.slice(upTo);
    this.#show(stream, joined.slice(0, upTo));
  }

  /** The ended process's last partial lines, shown as they are. */
  #flush(): void {
    const lines = this.#lines as Record<OutputStream, LineState>;
    for (const stream of ['stdout', 'stderr'] as const) {
      const state = lines[stream];
      const rest = state.decoder.end();
      if (rest !== '') this.#feed(stream, state, rest);
      const held = state.held;
      state.held = '';
      if (held !== '') this.#show(stream, held);
    }
  }

  #show(stream: OutputStream, text: string): void {
    const bytes = Buffer.from((this.#rewrite as (text: string) => string)(text), 'utf8');
    if (bytes.length === 0) return;
    this.#chunks.push({ stream, start: this.#end, bytes });
    this.#end += bytes.length;
    this.#kept += bytes.length;
    this.#evict();
  }

  /**
   * Drops the oldest output until the ring is within its capacity: shown chunks first, then the
   * lines waiting for their end, then raw bytes nobody decoded (counted, never decoded).
   */
  #evict(): void {
    while (this.keptBytes > this.#capacity) {
      if (this.#kept > 0) {
        this.#dropShown(Math.min(this.#kept, this.keptBytes - this.#capacity));
        continue;
      }
      const lines = this.#lines as Record<OutputStream, LineState>;
      const holding = (['stdout', 'stderr'] as const).find((s) => lines[s].held !== '');
      if (holding !== undefined) {
        const state = lines[holding];
        this.#end += Buffer.byteLength(state.held);
        state.held = '';
        state.skipping = true;
        continue;
      }
      const oldest = this.#raw[this.#rawHead] as RawChunk;
      const excess = this.keptBytes - this.#capacity;
      if (oldest.bytes.length <= excess) {
        this.#rawHead += 1;
        this.#rawGone += 1;
        this.#rawBytes -= oldest.bytes.length;
        this.#dropStream(oldest.stream, oldest.bytes.length);
      } else {
        this.#raw[this.#rawHead] = { stream: oldest.stream, bytes: oldest.bytes.subarray(excess) };
        this.#rawBytes -= excess;
        this.#dropStream(oldest.stream, excess);
      }
    }
    this.#compactShown();
    if (this.#lines) this.#compactRaw();
  }

  #dropShown(excess: number): void {
    while (excess > 0) {
      const oldest = this.#chunks[this.#head] as Chunk;
      if (oldest.bytes.length <= excess) {
        this.#head += 1;
        this.#kept -= oldest.bytes.length;
        excess -= oldest.bytes.length;
      } else {
        this.#chunks[this.#head] = {
          stream: oldest.stream,
          start: oldest.start + excess,
          bytes: oldest.bytes.subarray(excess),
        };
        this.#kept -= excess;
        excess = 0;
      }
    }
  }

  /**
   * `count` raw bytes of `stream` are gone undecoded: a gap in the positions, and the stream's
   * text resumes after its next line end (the rest of a cut line could be half a host path).
   */
  #dropStream(stream: OutputStream, count: number): void {
    this.#end += count;
    const state = (this.#lines as Record<OutputStream, LineState>)[stream];
    this.#end += Buffer.byteLength(state.held);
    state.held = '';
    state.decoder = new StringDecoder('utf8');
    state.skipping = true;
  }

  #heldChars(): number {
    return this.#lines ? this.#lines.stdout.held.length + this.#lines.stderr.held.length : 0;
  }

  // Compact once the dead prefix dominates, so the arrays stay O(live chunks) amortised.
  #compactShown(): void {
    if (this.#head > 64 && this.#head * 2 > this.#chunks.length) {
      this.#chunks.splice(0, this.#head);
      this.#head = 0;
    }
  }

  #compactRaw(): void {
    if (this.#rawHead > 64 && this.#rawHead * 2 > this.#raw.length) {
      this.#raw.splice(0, this.#rawHead);
      this.#rawHead = 0;
    }
  }

  /**
   * Output after `since` (default: all kept), at most `maxBytes`. A rewriting ring shows what its
   * last `settle()` reached; without one, everything appended.
   */
  read(
    options: ProcessOutputOptions = {},
  ): Pick<ProcessOutput, 'text' | 'stdout' | 'stderr' | 'cursor' | 'droppedBytes' | 'more'> {
    const since = Math.min(Math.max(0, Math.floor(options.since ?? 0)), this.#end);
    const limit = Math.min(
      Math.max(1, Math.floor(options.maxBytes ?? MAX_PROCESS_OUTPUT_READ_BYTES)),
      MAX_PROCESS_OUTPUT_READ_BYTES,
    );
    const from = Math.max(since, this.start);
    const parts: { stream: OutputStream; bytes: Buffer }[] = [];
    let cursor = from;
    let taken = 0;
    let i = this.#lowerBound(from);
    for (; i < this.#chunks.length && taken < limit; i++) {
      const chunk = this.#chunks[i] as Chunk;
      const offset = Math.max(0, from - chunk.start);
      const piece = chunk.bytes.subarray(offset, offset + (limit - taken));
      if (piece.length === 0) continue;
      parts.push({ stream: chunk.stream, bytes: piece });
      taken += piece.length;
      cursor = chunk.start + offset + piece.length;
    }
    // Every kept chunk was read: what lies between it and the end was dropped.
    if (i >= this.#chunks.length && taken < limit) cursor = this.#end;
    return {
      ...decodeParts(parts),
      cursor,
      // Everything between `since` and the cursor that is not in the text: dropped output.
      droppedBytes: cursor - since - taken,
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

function lineState(): LineState {
  return { decoder: new StringDecoder('utf8'), held: '', skipping: false };
}

/**
 * The chunk as a Buffer of its own: a small view into a large buffer (an SDK's frame) would keep
 * the whole of it alive, and the ring counts only the view.
 */
function toOwnBuffer(data: Buffer | Uint8Array | string): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return data.byteLength * 2 < data.buffer.byteLength ? Buffer.from(view) : view;
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
