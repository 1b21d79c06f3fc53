import { InvalidArgumentError } from '../errors/errors.js';

/**
 * Longest path argument accepted, in UTF-8 bytes: Linux's `PATH_MAX`. No file operation can name
 * a longer path anyway, and refusing early keeps every later step (mapping, canonicalisation,
 * masking) bounded by it, whatever size a tool-call message may have.
 */
export const MAX_PATH_BYTES = 4096;

const SHOWN_PATH_CHARS = 160;

/** A path as an error message may echo it: long ones cut, so a 100 KB argument is not repeated. */
export function shownPath(p: string): string {
  if (p.length <= SHOWN_PATH_CHARS) return p;
  return `${p.slice(0, SHOWN_PATH_CHARS)}… (${p.length} characters)`;
}

/**
 * Refuses a path argument that no file operation could use: over `MAX_PATH_BYTES`, or holding a
 * NUL byte. Typed errors instead of a raw `ENAMETOOLONG` or `TypeError` from the runtime.
 */
export function assertPathArgument(p: string, what = 'path'): void {
  if (typeof p !== 'string') {
    throw new InvalidArgumentError(`Invalid ${what}: expected a string, got ${typeof p}`);
  }
  // UTF-8 needs at most 3 bytes per UTF-16 unit, so short strings need no byte count.
  if (p.length * 3 > MAX_PATH_BYTES && Buffer.byteLength(p, 'utf8') > MAX_PATH_BYTES) {
    throw new InvalidArgumentError(
      `Invalid ${what}: ${Buffer.byteLength(p, 'utf8')} bytes long, at most ${MAX_PATH_BYTES} (${shownPath(p)})`,
    );
  }
  if (p.includes('\0')) {
    throw new InvalidArgumentError(`Invalid ${what}: contains a NUL byte (${shownPath(p)})`);
  }
}
