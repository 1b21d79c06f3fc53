/**
 * Which SDK failures mean the remote sandbox (or the way to it) is gone for good, so the adapter
 * must stop using it and the provider must replace it. The decision walks the whole `cause` chain,
 * because the SDK and `fetch` wrap the failure that matters (`TypeError: fetch failed` caused by
 * `ECONNREFUSED`, an exception wrapping an HTTP status).
 *
 * - a connection that cannot be made or died under us (the errno codes below);
 * - `SandboxUnhealthyException` (the SDK's own verdict);
 * - HTTP 410 Gone anywhere;
 * - HTTP 404 only on the command and renewal paths (and when killing): there it means the sandbox
 *   no longer exists, whereas a 404 from the file API is just a missing file.
 */

/** The kind of SDK call that failed; it decides whether a 404 is terminal. */
export type RemoteOperation = 'command' | 'renew' | 'file' | 'kill';

/** Node / undici codes of a connection that could not be made or was lost. */
export const TERMINAL_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

export const UNHEALTHY_ERROR_NAME = 'SandboxUnhealthyException';

const MAX_CAUSE_DEPTH = 8;

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = error;
  while (current !== undefined && current !== null && chain.length < MAX_CAUSE_DEPTH) {
    if (chain.includes(current)) break;
    chain.push(current);
    current = typeof current === 'object' ? (current as { cause?: unknown }).cause : undefined;
  }
  return chain;
}

/** The HTTP status an SDK error carries (`SandboxApiException.statusCode`), if any. */
export function statusCodeOf(error: unknown): number | undefined {
  for (const link of causes(error)) {
    const status = (link as { statusCode?: unknown } | null)?.statusCode;
    if (typeof status === 'number') return status;
  }
  return undefined;
}

export function isTerminalRemoteError(error: unknown, operation: RemoteOperation): boolean {
  for (const link of causes(error)) {
    if (typeof link !== 'object' || link === null) continue;
    const { name, code, statusCode } = link as {
      name?: unknown;
      code?: unknown;
      statusCode?: unknown;
    };
    if (name === UNHEALTHY_ERROR_NAME) return true;
    if (typeof code === 'string' && TERMINAL_ERROR_CODES.has(code)) return true;
    if (statusCode === 410) return true;
    if (statusCode === 404 && operation !== 'file') return true;
  }
  return false;
}

/** A short text for log lines and wrapped errors. */
export function describeRemoteError(error: unknown): string {
  if (error instanceof Error) {
    const status = statusCodeOf(error);
    return status === undefined ? error.message || error.name : `${error.message} (HTTP ${status})`;
  }
  return String(error);
}
