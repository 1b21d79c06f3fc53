import { InvalidArgumentError } from '../errors/errors.js';

// Deliberately excludes `=` (a leading `A=b` word is an assignment), `~` (tilde expansion) and
// everything the shell interprets.
const SAFE_WORD = /^[A-Za-z0-9_@%+:,./-]+$/;

/**
 * Quotes one word for a POSIX shell (`sh`, `bash`, busybox `ash`): single quotes, with each
 * embedded `'` written as `'\''`. Inside single quotes nothing is special, so the result is
 * always read back as exactly `value`. Plain words are returned as they are, for readable
 * commands. A NUL cannot be carried by any argv, so it is refused rather than silently cut.
 * Note: quoting does not stop a word that starts with `-` from being read as an option; put
 * `--` or `-e` before such arguments.
 */
export function shellQuote(value: string): string {
  if (typeof value !== 'string') {
    throw new InvalidArgumentError(`shellQuote expects a string, got ${typeof value}`);
  }
  if (value.includes('\0')) {
    throw new InvalidArgumentError('a shell argument cannot contain a NUL character');
  }
  if (SAFE_WORD.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
