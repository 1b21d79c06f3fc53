import { SbxError, type SbxErrorOptions } from './errors.js';

/** Which bound of a workspace checkpoint was reached. */
export type CheckpointLimitName = 'totalBytes' | 'entries' | 'entryBytes' | 'expandedBytes';

/**
 * A workspace checkpoint (export or import) reached one of its bounds; the work stopped there and
 * nothing was kept (an import leaves no file; an export's partial output must be discarded).
 */
export class CheckpointLimitError extends SbxError {
  static override readonly CODE = 'CHECKPOINT_LIMIT';
  readonly limit: CheckpointLimitName;
  readonly bound: number;
  constructor(limit: CheckpointLimitName, bound: number, options: SbxErrorOptions = {}) {
    super(`Checkpoint exceeds its ${limit} limit of ${bound}`, {
      ...options,
      details: { limit, bound },
    });
    this.limit = limit;
    this.bound = bound;
  }
}

/**
 * An archive entry an import refuses: a name that could leave the destination (`..`, absolute,
 * backslash, NUL), a link of any kind, a device, FIFO or socket, a duplicate, or a name outside the
 * three thread directories. The whole import is refused and nothing is written.
 */
export class CheckpointEntryRefusedError extends SbxError {
  static override readonly CODE = 'CHECKPOINT_ENTRY_REFUSED';
  readonly reason: string;
  constructor(entry: string, reason: string, options: SbxErrorOptions = {}) {
    // The name comes from an untrusted archive: shown JSON-quoted and cut, never raw.
    super(`Checkpoint entry refused: ${reason}`, {
      ...options,
      details: { entry: JSON.stringify(entry.slice(0, 200)), reason },
    });
    this.reason = reason;
  }
}

/**
 * An archive is not a well-formed checkpoint or does not match its own manifest: corrupt gzip or
 * tar, a missing or malformed manifest, an unknown format version, a checksum or size mismatch.
 */
export class CheckpointIntegrityError extends SbxError {
  static override readonly CODE = 'CHECKPOINT_INTEGRITY';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}
