import { SbxError, type SbxErrorOptions } from '@sbx/core';

/**
 * `isolation: bwrap` was asked for and bubblewrap cannot confine commands here. `details.cause`
 * says what failed (the probe's own words), `details.fix` what makes it work.
 */
export class ConfinementUnavailableError extends SbxError {
  static override readonly CODE = 'CONFINEMENT_UNAVAILABLE';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

/** A thread's namespace could not be started or entered (its bubblewrap said why). */
export class ConfinementStartError extends SbxError {
  static override readonly CODE = 'CONFINEMENT_START_FAILED';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}
