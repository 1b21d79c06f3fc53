import { SbxError, type SbxErrorOptions } from './errors.js';

/** A sandbox cannot do what was asked (`sandbox.capabilities` says so before the call). */
export class CapabilityNotSupportedError extends SbxError {
  static override readonly CODE = 'CAPABILITY_NOT_SUPPORTED';
  readonly capability: string;
  constructor(capability: string, message: string, options: SbxErrorOptions = {}) {
    super(message, { ...options, details: { capability } });
    this.capability = capability;
  }
}

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
