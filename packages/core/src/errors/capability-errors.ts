import { SbxError, type SbxErrorOptions } from './errors.js';

/** The lifecycle capabilities a provider may offer beyond acquire and release. */
export type SandboxCapability = 'pause' | 'resume' | 'snapshot' | 'fromSnapshot';

/**
 * A provider was asked for a capability it does not offer (see `SandboxProvider.lifecycleSupport`).
 * Raised instead of emulating it: a "pause" that destroys processes, or a restore that silently
 * starts empty, would lose exactly what the caller asked to keep.
 */
export class CapabilityNotSupportedError extends SbxError {
  static override readonly CODE = 'CAPABILITY_NOT_SUPPORTED';
  readonly provider: string;
  readonly capability: SandboxCapability;
  constructor(
    provider: string,
    capability: SandboxCapability,
    reason?: string,
    options: SbxErrorOptions = {},
  ) {
    super(
      `Sandbox provider ${provider} does not support ${capability}${reason ? `: ${reason}` : ''}`,
      { ...options, details: { provider, capability } },
    );
    this.provider = provider;
    this.capability = capability;
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
