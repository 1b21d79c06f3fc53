/**
 * Which failures mean the Tenki microVM (or the session to it) is gone for good. Classified by
 * error `name` (the Python SDK's class names, so implementations need not share classes with
 * sbx) and by Node's errno codes for a connection that died. Anything else, including a transient
 * gRPC `UNAVAILABLE`, is an ordinary failure: the call fails, the VM stays.
 */

export const TERMINAL_ERROR_NAMES: ReadonlySet<string> = new Set([
  'SessionTerminatedError',
  'SessionNotFoundError',
  'InvalidStateError',
  'StreamClosedError',
  // Python's builtin connection family, as a bridge to the Python SDK would name them.
  'ConnectionError',
  'ConnectionResetError',
  'ConnectionRefusedError',
  'ConnectionAbortedError',
  'BrokenPipeError',
  'EOFError',
]);

export const TERMINAL_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ERR_STREAM_PREMATURE_CLOSE',
  'EOF',
]);

function nameOf(error: unknown): string | undefined {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : undefined;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function terminalHere(error: unknown): boolean {
  const name = nameOf(error);
  const code = codeOf(error);
  return (
    (name !== undefined && TERMINAL_ERROR_NAMES.has(name)) ||
    (code !== undefined && TERMINAL_ERROR_CODES.has(code))
  );
}

/** The error, or the error it wraps (`cause`), says the session is gone. */
export function isTerminalTenkiError(error: unknown): boolean {
  return terminalHere(error) || terminalHere((error as { cause?: unknown } | null)?.cause);
}

export type TenkiFileProblem = 'missing' | 'is-directory' | 'not-directory' | 'permission';

/** A file failure by SDK class name or errno code; `undefined` for anything else. */
export function tenkiFileProblem(error: unknown): TenkiFileProblem | undefined {
  const name = nameOf(error);
  const code = codeOf(error);
  if (name === 'FileNotFoundError' || code === 'ENOENT') return 'missing';
  if (name === 'IsADirectoryError' || code === 'EISDIR') return 'is-directory';
  if (name === 'NotADirectoryError' || code === 'ENOTDIR') return 'not-directory';
  if (name === 'PermissionError' || code === 'EACCES' || code === 'EPERM') return 'permission';
  return undefined;
}
