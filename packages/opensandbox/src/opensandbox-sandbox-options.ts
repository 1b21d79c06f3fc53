import type { Clock, Logger } from '@sbx/core';
import type { OpenSandboxSandbox } from './opensandbox-sandbox.js';
import type { OpenSandboxRemote } from './opensandbox-sdk.js';

/** Largest file `downloadFile` transfers: 100 MiB. */
export const MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024;
/** Permission bits of files written through the file API (octal digits, as execd reads them). */
export const WRITE_FILE_MODE = 644;
export const SANDBOX_CLOSED_MESSAGE = 'OpenSandbox sandbox has been closed';

export type TerminalFailureListener = (sandbox: OpenSandboxSandbox, error: unknown) => void;

export interface OpenSandboxSandboxOptions {
  readonly remote: OpenSandboxRemote;
  /** Static variables of every command; a call's `env` is layered on top. */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Seconds the remote lives past the latest operation (default 4 h); `null` = explicit-cleanup
   * mode: the sandbox has no lifetime and is never renewed.
   */
  readonly lifetimeSeconds?: number | null;
  /** Limit of `executeCommand` when the caller gives none, and of search commands. Default 600. */
  readonly commandTimeoutSeconds?: number;
  /** Default `MAX_DOWNLOAD_BYTES`. */
  readonly maxDownloadBytes?: number;
  /** Told once when a failure means the remote is gone; the provider then evicts and deletes it. */
  readonly onTerminalFailure?: TerminalFailureListener;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** Outcome of a command run without renewal (bootstrap, health check). */
export interface ProbeResult {
  readonly exitCode: number | null;
  /** `exit code N`, or what is known about a run that reported no exit code. */
  readonly detail: string;
}
