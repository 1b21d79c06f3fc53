/**
 * The lifecycle capabilities a provider offers beyond acquire and release, as flags a caller can
 * read before asking. A capability whose flag is false is refused with
 * `CapabilityNotSupportedError`, never emulated.
 */
export interface SandboxLifecycleSupport {
  /** `pause(id)` suspends the sandbox with its processes kept; `resume(id)` continues it. */
  readonly pause: boolean;
  /** `snapshot(id)` records the sandbox's thread data; `acquire({ fromSnapshot })` restores it. */
  readonly snapshot: boolean;
}

export const NO_LIFECYCLE_SUPPORT: SandboxLifecycleSupport = { pause: false, snapshot: false };

/**
 * A snapshot a provider made, as handed back by `snapshot(id)` and passed to
 * `acquire({ fromSnapshot })`. Opaque to callers: `id` is the provider's own and is checked by it
 * (it is untrusted when it comes back from storage or a caller).
 */
export interface SnapshotRef {
  /** The provider kind that made it (`local`, `aio`, ...); another kind refuses it. */
  readonly provider: string;
  readonly id: string;
  /** ISO 8601. */
  readonly createdAt: string;
  /** Size of what was recorded, when the provider knows it. */
  readonly sizeBytes?: number;
  /**
   * ISO 8601: when the snapshot stops restoring (`SnapshotExpiredError`), when the provider
   * expires them. Informational: the provider decides from its own record, never from this field.
   */
  readonly expiresAt?: string;
}
