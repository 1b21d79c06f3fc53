import path from 'node:path';
import {
  CapabilityNotSupportedError,
  SnapshotArchiveStore,
  checkpointLimitsOf,
  type CheckpointConfig,
  type Logger,
} from '@sbx/core';

export const LOCAL_SNAPSHOT_PROVIDER = 'local';

/** Why pause is refused by the local provider, said in its error. */
export const LOCAL_PAUSE_UNSUPPORTED =
  'pausing a thread needs a freezer for its confined processes, which the local provider does not have yet';

export function localPauseRefusal(capability: 'pause' | 'resume'): CapabilityNotSupportedError {
  return CapabilityNotSupportedError.lifecycle(
    'LocalSandboxProvider',
    capability,
    LOCAL_PAUSE_UNSUPPORTED,
  );
}

/**
 * Workspace checkpoints of local threads, kept in `<base>/snapshots/<id>.tar.gz`: core's
 * `SnapshotArchiveStore` (the checkpoint format, temporary name then rename, the untrusted-archive
 * import on restore, expiry), bounded and given a life by `sandbox.checkpoint`.
 */
export function localSnapshotStore(
  baseDir: string,
  checkpoint: CheckpointConfig | undefined,
  logger: Logger,
): SnapshotArchiveStore {
  return new SnapshotArchiveStore({
    dir: path.join(baseDir, 'snapshots'),
    provider: LOCAL_SNAPSHOT_PROVIDER,
    limits: checkpointLimitsOf(checkpoint),
    ttlSeconds: checkpoint?.snapshotTtlSeconds ?? 0,
    logger,
  });
}
