import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  CapabilityNotSupportedError,
  InvalidArgumentError,
  SnapshotNotFoundError,
  readCheckpoint,
  writeCheckpoint,
  type CheckpointLimits,
  type SnapshotRef,
  type ThreadLayout,
} from '@sbx/core';

export const LOCAL_SNAPSHOT_PROVIDER = 'local';
/** Random, so a snapshot id names nothing a caller could guess or steer into a path. */
const SNAPSHOT_ID = /^snap-[0-9a-f]{32}$/;

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
 * Workspace checkpoints of local threads, kept in `<base>/snapshots/<id>.tar.gz` (the checkpoint
 * format of @sbx/core). A snapshot is written to a temporary name and renamed when complete, so a
 * failed or bounded-out export never leaves a usable-looking archive; a restore goes through the
 * untrusted-archive import (a snapshot file on disk is data the gateway does not re-trust).
 */
export class LocalSnapshotStore {
  readonly dir: string;
  readonly #limits: Partial<CheckpointLimits> | undefined;

  constructor(baseDir: string, limits?: Partial<CheckpointLimits>) {
    this.dir = path.join(baseDir, 'snapshots');
    this.#limits = limits;
  }

  /** Where a checked snapshot id's archive lives. */
  archivePath(id: string): string {
    return path.join(this.dir, `${id}.tar.gz`);
  }

  async create(layout: ThreadLayout): Promise<SnapshotRef> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const id = `snap-${randomBytes(16).toString('hex')}`;
    const final = this.archivePath(id);
    const partial = `${final}.partial`;
    try {
      const summary = await writeCheckpoint(
        {
          workspace: layout.workspacePath,
          uploads: layout.uploadsPath,
          outputs: layout.outputsPath,
        },
        createWriteStream(partial, { flags: 'wx', mode: 0o600 }),
        { limits: this.#limits },
      );
      await rename(partial, final);
      return {
        provider: LOCAL_SNAPSHOT_PROVIDER,
        id,
        createdAt: new Date().toISOString(),
        sizeBytes: summary.archiveBytes,
      };
    } catch (err) {
      await rm(partial, { force: true });
      throw err;
    }
  }

  /**
   * Restores `ref` as the thread's user data. The thread must have none yet: a restore never
   * merges into (or replaces) data a thread already has.
   */
  async restore(ref: SnapshotRef, layout: ThreadLayout): Promise<void> {
    const id = this.checkedId(ref);
    const archive = this.archivePath(id);
    if (!(await exists(archive))) throw new SnapshotNotFoundError(id);
    if (await exists(layout.userDataPath)) {
      throw new InvalidArgumentError('fromSnapshot needs a thread that has no data yet', {
        details: { snapshot_id: id },
      });
    }
    await mkdir(layout.threadDir, { recursive: true });
    await readCheckpoint(createReadStream(archive), layout.userDataPath, { limits: this.#limits });
  }

  /** The id of a reference from a caller or storage, checked once, here. */
  checkedId(ref: SnapshotRef): string {
    if (typeof ref !== 'object' || ref === null || ref.provider !== LOCAL_SNAPSHOT_PROVIDER) {
      throw new InvalidArgumentError('not a snapshot of the local provider');
    }
    if (typeof ref.id !== 'string' || !SNAPSHOT_ID.test(ref.id)) {
      throw new InvalidArgumentError('malformed snapshot id');
    }
    return ref.id;
  }
}

async function exists(target: string): Promise<boolean> {
  try {
    await lstat(target);
    return true;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return false;
    throw err;
  }
}
