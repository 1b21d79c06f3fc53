import { AbortedError } from '../errors/errors.js';

/**
 * Throws `AbortedError` (with the signal's reason as its `cause`) once `signal` has fired. Called
 * between the steps of cancellable work, so a caller who stopped waiting causes no further side
 * effects (no VM created, no file walked) after it left.
 */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError(undefined, { cause: signal.reason });
}
