import { SbxError, type SbxErrorOptions } from './errors.js';

/** The lifecycle capabilities a provider may offer beyond acquire and release. */
export type SandboxCapability = 'pause' | 'resume' | 'snapshot' | 'fromSnapshot';

/**
 * A sandbox or provider was asked for something it does not offer: a process input it cannot
 * write, a signal its backend cannot send, or a lifecycle capability (see
 * `SandboxProvider.lifecycleSupport`). Raised instead of emulating it: a "pause" that destroys
 * processes, or a restore that silently starts empty, would lose exactly what the caller asked to
 * keep. One class (one code) for every such refusal.
 */
export class CapabilityNotSupportedError extends SbxError {
  static override readonly CODE = 'CAPABILITY_NOT_SUPPORTED';
  readonly capability: string;
  /** The provider that refused, for a lifecycle refusal. */
  readonly provider: string | undefined;
  constructor(
    capability: string,
    message: string,
    options: SbxErrorOptions & { readonly provider?: string } = {},
  ) {
    const { provider, ...rest } = options;
    super(message, {
      ...rest,
      details: { capability, ...(provider !== undefined ? { provider } : {}) },
    });
    this.capability = capability;
    this.provider = provider;
  }

  /** A provider's refusal of a lifecycle capability it does not offer. */
  static lifecycle(
    provider: string,
    capability: SandboxCapability,
    reason?: string,
  ): CapabilityNotSupportedError {
    return new CapabilityNotSupportedError(
      capability,
      `Sandbox provider ${provider} does not support ${capability}${reason ? `: ${reason}` : ''}`,
      { provider },
    );
  }
}

/** A snapshot reference names no snapshot this provider holds (never made, or deleted). */
export class SnapshotNotFoundError extends SbxError {
  static override readonly CODE = 'SNAPSHOT_NOT_FOUND';
  readonly snapshotId: string;
  constructor(snapshotId: string, options: SbxErrorOptions = {}) {
    super('Snapshot not found', { ...options, details: { snapshot_id: snapshotId } });
    this.snapshotId = snapshotId;
  }
}

/**
 * A lifecycle change (a pause) was asked of a sandbox a turn is using now: it holds an execution
 * lease. Refused rather than waited for, so a caller never blocks behind a turn of unknown length
 * and a running command is never frozen half-way by someone who is not running it.
 */
export class SandboxBusyError extends SbxError {
  static override readonly CODE = 'SANDBOX_BUSY';
  readonly sandboxId: string;
  constructor(sandboxId: string, operation: string, options: SbxErrorOptions = {}) {
    super(`Sandbox ${sandboxId} is in use by a turn; ${operation} refused`, {
      ...options,
      details: { sandbox_id: sandboxId, operation, ...options.details },
    });
    this.sandboxId = sandboxId;
  }
}

/** A snapshot reference is past its expiry (`SnapshotRef.expiresAt`): it restores nothing. */
export class SnapshotExpiredError extends SbxError {
  static override readonly CODE = 'SNAPSHOT_EXPIRED';
  readonly snapshotId: string;
  constructor(snapshotId: string, expiresAt: string, options: SbxErrorOptions = {}) {
    super('Snapshot expired', {
      ...options,
      details: { snapshot_id: snapshotId, expires_at: expiresAt },
    });
    this.snapshotId = snapshotId;
  }
}
