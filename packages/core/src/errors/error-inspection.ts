import {
  SandboxAuthorizationError,
  SearchTimeoutError,
  isSbxError,
  type FileErrorKind,
} from './errors.js';

/** The POSIX-style kind of a typed file error, if `err` is one. */
export function fileErrorKind(err: unknown): FileErrorKind | undefined {
  if (!isSbxError(err)) return undefined;
  const kind = (err as { kind?: unknown }).kind;
  return typeof kind === 'string' ? (kind as FileErrorKind) : undefined;
}

export function isNotFoundError(err: unknown): boolean {
  return fileErrorKind(err) === 'ENOENT';
}

/** Missing, or a parent of the path is a file: either way there is no such file to read. */
export function isMissingFileError(err: unknown): boolean {
  const kind = fileErrorKind(err);
  return kind === 'ENOENT' || kind === 'ENOTDIR';
}

export function isPermissionError(err: unknown): boolean {
  const kind = fileErrorKind(err);
  return kind === 'EACCES' || kind === 'EROFS';
}

/** Denials keep their own wording in every tool: the model must see that it is not allowed. */
export function isAuthorizationDenial(err: unknown): boolean {
  return (
    err instanceof SandboxAuthorizationError ||
    (isSbxError(err) && err.code === SandboxAuthorizationError.CODE)
  );
}

/** `<ErrorName>: <message>` of anything thrown, for the "unexpected error" results. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name || 'Error'}: ${err.message}`;
  return `Error: ${String(err)}`;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * What a search found before its deadline, when `err` is a `SearchTimeoutError` that carries it:
 * the tools show it after the error line, so the agent keeps the work already done.
 */
export function partialOf<T>(err: unknown): T | undefined {
  if (!isSbxError(err) || err.code !== SearchTimeoutError.CODE) return undefined;
  return (err as SearchTimeoutError<T>).partial;
}
