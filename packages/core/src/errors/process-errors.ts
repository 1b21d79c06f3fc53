import { SbxError, type SbxErrorOptions } from './errors.js';

/** No background process of that id in this sandbox (never started, or forgotten since). */
export class ProcessNotFoundError extends SbxError {
  static override readonly CODE = 'PROCESS_NOT_FOUND';
  readonly processId: string;
  constructor(processId: string, options: SbxErrorOptions = {}) {
    super(`No background process with id '${processId}' in this sandbox`, options);
    this.processId = processId;
  }
}

/**
 * A background process cannot take the call in its current state: stdin written after the
 * process ended or its input was closed, a start over the per-sandbox process limit, a start on a
 * closed sandbox.
 */
export class ProcessStateError extends SbxError {
  static override readonly CODE = 'PROCESS_STATE';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

/**
 * A write to a process's standard input was not taken within its time limit (the process does
 * not read its input, and the pipe is full). `acceptedBytes` were taken; the rest was not sent,
 * except what was already on its way, which still reaches the process if it reads.
 */
export class ProcessInputBlockedError extends SbxError {
  static override readonly CODE = 'PROCESS_INPUT_BLOCKED';
  readonly processId: string;
  readonly acceptedBytes: number;
  readonly totalBytes: number;
  readonly timeoutMs: number;
  constructor(
    processId: string,
    progress: { acceptedBytes: number; totalBytes: number; timeoutMs: number },
    options: SbxErrorOptions = {},
  ) {
    super(
      `Process ${processId} did not take its input within ${progress.timeoutMs} ms (it is not reading it): ` +
        `${progress.acceptedBytes} of ${progress.totalBytes} bytes were accepted; the rest was not sent ` +
        `(a part already on its way still reaches it if it reads)`,
      options,
    );
    this.processId = processId;
    this.acceptedBytes = progress.acceptedBytes;
    this.totalBytes = progress.totalBytes;
    this.timeoutMs = progress.timeoutMs;
  }
}
