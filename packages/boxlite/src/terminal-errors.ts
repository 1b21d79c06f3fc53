/**
 * Which exec failures mean the micro-VM is gone. The BoxLite SDK reports transport failures as
 * plain `Error`s whose message is all there is to go on, so classification is by message markers.
 * A retryable marker wins over a terminal one: "vsock transport not ready, retry later" is a VM
 * still booting, not a dead one, and evicting it would throw away a healthy box.
 */

/** Lower-case substrings of a message that mean the VM (or the channel to it) is gone. */
export const DEFAULT_TERMINAL_MARKERS: readonly string[] = Object.freeze([
  'vsock',
  'disconnected',
  'broken pipe',
  'connection reset',
  'connection refused',
  'no such box',
  'box has been stopped',
  'engine reported an error',
]);

/** Lower-case substrings that mark a failure as transient even if a terminal marker matches. */
export const DEFAULT_RETRYABLE_MARKERS: readonly string[] = Object.freeze([
  'transport not ready',
  'retry later',
  'temporarily unavailable',
  'resource busy',
]);

/** Node's names for a connection that died under us (the `ConnectionError` family elsewhere). */
const TERMINAL_ERRNO = new Set(['ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE']);

export interface TerminalMarkers {
  readonly terminal: readonly string[];
  readonly retryable: readonly string[];
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : String(error);
}

export function isTerminalBoxError(
  error: unknown,
  markers: TerminalMarkers = {
    terminal: DEFAULT_TERMINAL_MARKERS,
    retryable: DEFAULT_RETRYABLE_MARKERS,
  },
): boolean {
  const message = messageOf(error).toLowerCase();
  if (markers.retryable.some((m) => message.includes(m))) return false;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && TERMINAL_ERRNO.has(code)) return true;
  return markers.terminal.some((m) => message.includes(m));
}
