import type { Clock, Logger } from '@sbx/core';
import type { TenkiRemoteSandbox } from './tenki-client.js';
import type { TenkiSandbox } from './tenki-sandbox.js';

/** Largest file `downloadFile` transfers: 100 MiB, counted on the bytes actually received. */
export const MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024;
/** Frame size of streamed uploads. */
export const STREAM_CHUNK_BYTES = 1024 * 1024;
/** Extra wait beyond the in-VM timeout before sbx gives up on a command. */
export const COMMAND_DEADLINE_GRACE_MS = 5_000;
export const SANDBOX_CLOSED_MESSAGE = 'sandbox has been closed';

export type TenkiTerminalListener = (sandbox: TenkiSandbox, error: unknown) => void;

export interface TenkiSandboxOptions {
  readonly remote: TenkiRemoteSandbox;
  /** The writable HOME that stands in for `/mnt/user-data`. Default `/home/tenki`. */
  readonly homeDir?: string;
  readonly environment?: Readonly<Record<string, string>>;
  readonly commandTimeoutSeconds?: number | undefined;
  /** Told when a call fails in a way that means the microVM is gone. */
  readonly onTerminalFailure?: TenkiTerminalListener;
  readonly clock?: Clock;
  readonly logger?: Logger;
}
