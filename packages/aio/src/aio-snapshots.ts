import path from 'node:path';
import {
  CapabilityNotSupportedError,
  InvalidArgumentError,
  SandboxNotFoundError,
  SnapshotArchiveStore,
  checkpointLimitsOf,
  threadLayout,
} from '@sbx/core';
import type { CheckpointConfig, SnapshotRef } from '@sbx/core';
import { serializerKey } from '@sbx/core/provider-kit';
import type { AioThreadIdentity } from './aio-identity.js';
import type { HoldThread } from './aio-pauses.js';
import type { AioProviderContext } from './aio-provider-context.js';

/** The `SnapshotRef.provider` of AIO snapshots. */
export const AIO_SNAPSHOT_PROVIDER = 'aio';
const PROVIDER = 'AioSandboxProvider';

/**
 * Snapshots of AIO threads: a workspace checkpoint (`@sbx/core`'s format) of the thread's
 * user-data directories, which local containers bind-mount from this host, kept in
 * `<base_dir>/snapshots/aio/`. Restored by `acquire({ fromSnapshot })` into a thread with no data
 * yet, before its container is created, so the container starts with the files.
 *
 * Offered only where the thread data is on this host (`usesThreadDataMounts`): a provisioner's
 * Pods keep it elsewhere, and the provider refuses (typed) rather than export through the sandbox.
 * The export reads what the sandbox wrote as hostile (links are left out, limits are checked as it
 * streams); the restore reads the archive as hostile too.
 */
export class AioSnapshots {
  readonly #ctx: AioProviderContext;
  readonly #hold: HoldThread;
  readonly #onHost: () => boolean;
  readonly store: SnapshotArchiveStore;

  constructor(
    ctx: AioProviderContext,
    hold: HoldThread,
    onHost: () => boolean,
    checkpoint: CheckpointConfig | undefined,
  ) {
    this.#ctx = ctx;
    this.#hold = hold;
    this.#onHost = onHost;
    const { settings } = ctx;
    // `sandbox.checkpoint`: the export and the restore are bounded alike; snapshots expire after
    // `snapshot_ttl_seconds` (0: never).
    this.store = new SnapshotArchiveStore({
      dir: path.join(settings.baseDir, 'snapshots', AIO_SNAPSHOT_PROVIDER),
      provider: AIO_SNAPSHOT_PROVIDER,
      limits: checkpointLimitsOf(checkpoint),
      ttlSeconds: checkpoint?.snapshotTtlSeconds ?? 0,
      clock: ctx.clock,
      logger: ctx.logger,
    });
  }

  get supported(): boolean {
    return this.#onHost();
  }

  /** A checkpoint of the thread data of a sandbox this instance holds (active or warm). */
  async snapshot(id: string): Promise<SnapshotRef> {
    this.#refuseUnlessSupported('snapshot');
    const identity = this.#threadOf(id);
    // Under the thread's acquire lock: no restore into the same thread runs meanwhile.
    return this.#hold(serializerKey(identity.userId, identity.threadId), async () => {
      this.#threadOf(id);
      return this.store.create(
        threadLayout(this.#ctx.settings.baseDir, identity.userId, identity.threadId),
      );
    });
  }

  /**
   * Restores `ref` as the thread's data; called under the thread's acquire lock, before the
   * acquire paths run. Refused (nothing written) for a forged, unknown or expired reference and
   * for a thread that already has data on disk.
   */
  async restoreBeforeAcquire(ref: SnapshotRef, identity: AioThreadIdentity): Promise<void> {
    this.#refuseUnlessSupported('fromSnapshot');
    await this.store.check(ref);
    // The one guard against restoring over a thread's data: its user-data directory must not
    // exist (any sandbox of the thread, here or on a peer, made it when it was created).
    await this.store.restore(
      ref,
      threadLayout(this.#ctx.settings.baseDir, identity.userId, identity.threadId),
    );
  }

  #refuseUnlessSupported(capability: 'snapshot' | 'fromSnapshot'): void {
    if (!this.supported) {
      throw CapabilityNotSupportedError.lifecycle(
        PROVIDER,
        capability,
        'the thread data is not on this host (a provisioner backend)',
      );
    }
  }

  #threadOf(id: string): AioThreadIdentity {
    const { book } = this.#ctx;
    const entry = book.active(id) ?? book.pool.get(id)?.value;
    if (entry === undefined || book.isTearingDown(id) || book.pool.isReserved(id)) {
      throw new SandboxNotFoundError('Sandbox is not held by this instance', id);
    }
    if (entry.identity === undefined) {
      throw new InvalidArgumentError('an anonymous sandbox has no thread data to snapshot', {
        details: { sandbox_id: id },
      });
    }
    return entry.identity;
  }
}
