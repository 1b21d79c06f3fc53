/**
 * One line of chunked framing (a chunk size with its extensions, a trailer, a chunk's end), read
 * from either side of an intercepted connection. Bounded before it is gathered: the limit is
 * checked on each piece as it arrives (also when its line end came in the same piece), the line
 * end is searched for only in the new piece, and the pieces are joined once, so a line sent a
 * byte per packet costs linear work.
 */
import type { StreamReader } from './socket-reader.js';

/** The longest chunk line either side may send (size, extensions, trailer), without its LF. */
export const MAX_CHUNK_LINE_BYTES = 4096;

/** The line without its LF (a CR before it is kept: the callers' framing rules differ). */
export type ChunkLine = { readonly line: Buffer } | 'ended' | 'too-long';

export async function readChunkLine(reader: StreamReader): Promise<ChunkLine> {
  const parts: Buffer[] = [];
  let length = 0;
  for (;;) {
    const chunk = await reader.read();
    if (chunk === null) return 'ended';
    const lf = chunk.indexOf(0x0a);
    const taken = lf === -1 ? chunk.length : lf;
    if (length + taken > MAX_CHUNK_LINE_BYTES) return 'too-long';
    length += taken;
    if (lf === -1) {
      parts.push(chunk);
      continue;
    }
    parts.push(chunk.subarray(0, lf));
    reader.unshift(chunk.subarray(lf + 1));
    return { line: parts.length === 1 ? parts[0]! : Buffer.concat(parts, length) };
  }
}
