import { decodeInTurns } from '@sbx/core/internal';

/** Per-stream capture limit of host commands: the head is kept, the rest is only counted. */
export const COMMAND_CAPTURE_LIMIT_BYTES = 10 * 1024 * 1024;

/**
 * Collects a child's output without letting a chatty command grow memory without bound: at most
 * `limit` bytes are kept (the head, which holds the command's own report), later bytes are counted
 * so the reader learns how much was dropped. Once sealed it ignores everything: a backgrounded
 * process that outlives the command keeps writing into the pipe, and those bytes belong to no one.
 */
export class BoundedCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private total = 0;
  private sealed = false;

  constructor(private readonly limit: number = COMMAND_CAPTURE_LIMIT_BYTES) {}

  append(chunk: Buffer): void {
    if (this.sealed) return;
    this.total += chunk.length;
    if (this.kept >= this.limit) return;
    const room = this.limit - this.kept;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(part);
    this.kept += part.length;
  }

  /** Bytes seen so far (kept or not). */
  get totalBytes(): number {
    return this.total;
  }

  /** Bytes were dropped past the limit. */
  get truncated(): boolean {
    return this.total > this.kept;
  }

  seal(): void {
    this.sealed = true;
  }

  /**
   * UTF-8 text with replacement characters, no newline translation, plus a truncation note;
   * decoded a slice per turn of the loop (10 MiB of invalid UTF-8 is a quarter second of work).
   * Bytes past the limit were never kept, so they are never decoded.
   */
  async text(): Promise<string> {
    const out = await decodeInTurns(Buffer.concat(this.chunks, this.kept));
    if (this.total <= this.kept) return out;
    return `${out}\n... [output truncated after ${this.kept} of ${this.total} bytes; remaining output discarded] ...`;
  }
}
