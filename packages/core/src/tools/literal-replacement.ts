import { Buffer } from 'node:buffer';
import { forEachOccurrence } from './literal-occurrences.js';

/** Short pieces are copied by hand: a native copy costs more than the bytes themselves. */
const NATIVE_COPY_BYTES = 32;

function copyInto(target: Buffer, at: number, source: Buffer, start: number, end: number): number {
  if (end - start > NATIVE_COPY_BYTES) return source.copy(target, at, start, end);
  for (let i = start; i < end; i++) target[at + i - start] = source[i] as number;
  return end - start;
}

/** `String.prototype.isWellFormed` (Node 20+; not yet in the ES2023 library typings). */
export function isWellFormedText(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/**
 * One `str_replace` edit on the UTF-8 bytes of a text: the occurrences are counted first, so the
 * size of the result is known, and can be refused, before a byte of it is built; then the result
 * is written once into a buffer of exactly that size. Nothing here grows with the number of
 * occurrences but the result itself (no array of pieces, no intermediate strings).
 *
 * Works on bytes, so every text must be well-formed Unicode (no lone surrogate): then a UTF-8
 * match is exactly a match of the characters, and the round trip loses nothing.
 */
export class LiteralReplacement {
  private constructor(
    private readonly text: Buffer,
    private readonly oldBytes: Buffer,
    private readonly newBytes: Buffer,
    /** Non-overlapping occurrences of the old text, as `indexOf` would find them. */
    readonly occurrences: number,
    private readonly first: number,
  ) {}

  /** Counts the occurrences of a non-empty `oldStr` in `text` (linear in the text). */
  static async scan(text: string, oldStr: string, newStr: string): Promise<LiteralReplacement> {
    const bytes = Buffer.from(text, 'utf8');
    const oldBytes = Buffer.from(oldStr, 'utf8');
    let first = -1;
    const occurrences = await forEachOccurrence(bytes, oldBytes, (at) => {
      if (first < 0) first = at;
    });
    return new LiteralReplacement(bytes, oldBytes, Buffer.from(newStr, 'utf8'), occurrences, first);
  }

  /** Bytes the text gains (negative: loses) by replacing the first or every occurrence. */
  growthBytes(replaceAll: boolean): number {
    const replaced = replaceAll ? this.occurrences : Math.min(this.occurrences, 1);
    return replaced * (this.newBytes.length - this.oldBytes.length);
  }

  /** The edited text. Check `growthBytes` first: the result is allocated at its full size. */
  async apply(replaceAll: boolean): Promise<string> {
    if (this.occurrences === 0) return this.text.toString('utf8');
    const out = Buffer.allocUnsafe(this.text.length + this.growthBytes(replaceAll));
    let written = 0;
    let from = 0;
    const replaceAt = (at: number): void => {
      written += copyInto(out, written, this.text, from, at);
      written += copyInto(out, written, this.newBytes, 0, this.newBytes.length);
      from = at + this.oldBytes.length;
    };
    if (replaceAll) await forEachOccurrence(this.text, this.oldBytes, replaceAt);
    else replaceAt(this.first);
    written += copyInto(out, written, this.text, from, this.text.length);
    return out.toString('utf8', 0, written);
  }
}
