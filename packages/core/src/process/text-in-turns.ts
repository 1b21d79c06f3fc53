import { StringDecoder } from 'node:string_decoder';

/** Bytes decoded, or characters rewritten, in one turn of the loop. */
const SLICE = 64 * 1024;

const nextImmediate = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * UTF-8 text of `bytes`, decoded a slice per turn of the loop: a command's captured output can
 * be megabytes of invalid UTF-8 (tens of ms per MB), and other tenants' calls must not wait
 * behind it in one block.
 */
export async function decodeInTurns(
  bytes: Uint8Array,
  yieldTurn: () => Promise<void> = nextImmediate,
): Promise<string> {
  if (bytes.length <= SLICE) return Buffer.from(bytes).toString('utf8');
  // StringDecoder, not TextDecoder: streaming, it is several times faster on invalid UTF-8.
  const decoder = new StringDecoder('utf8');
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parts: string[] = [];
  for (let offset = 0; offset < view.length; offset += SLICE) {
    if (offset > 0) await yieldTurn();
    parts.push(decoder.write(view.subarray(offset, offset + SLICE)));
  }
  parts.push(decoder.end());
  return parts.join('');
}

/**
 * `rewrite` (host-path masking, secret redaction) over a long text a slice per turn of the loop.
 * Slices end at a line end, as `StreamRewriter` cuts streamed text, so a path or a secret is seen
 * whole (a line longer than a slice is cut, as a streamed line longer than 64 KiB is).
 */
export async function rewriteInTurns(
  text: string,
  rewrite: (text: string) => string,
  yieldTurn: () => Promise<void> = nextImmediate,
): Promise<string> {
  if (text.length <= SLICE) return rewrite(text);
  const parts: string[] = [];
  let from = 0;
  while (from < text.length) {
    if (from > 0) await yieldTurn();
    let to = Math.min(text.length, from + SLICE);
    if (to < text.length) {
      const lineEnd = text.lastIndexOf('\n', to - 1);
      if (lineEnd >= from) to = lineEnd + 1;
    }
    parts.push(rewrite(text.slice(from, to)));
    from = to;
  }
  return parts.join('');
}
