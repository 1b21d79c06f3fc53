import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm, utimes } from 'node:fs/promises';
import path from 'node:path';
import { systemClock, type Clock } from '../async/clock.js';
import type { SnapshotRef } from '../contract/sandbox-lifecycle.js';
import { SnapshotExpiredError, SnapshotNotFoundError } from '../errors/capability-errors.js';
import { InvalidArgumentError } from '../errors/errors.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { ThreadLayout } from '../paths/virtual-paths-layout.js';
import { writeCheckpoint } from './checkpoint-export.js';
import type { CheckpointLimits } from './checkpoint-format.js';
import { readCheckpoint } from './checkpoint-import.js';

/** Random, so a snapshot id names nothing a caller could guess or steer into a path. */
const SNAPSHOT_ID = /^snap-[0-9a-f]{32}$/;
const ARCHIVE = /^(snap-[0-9a-f]{32})\.tar\.gz$/;
/** Sweeps look at this many directory entries at most per pass (the rest wait for the next). */
export const SNAPSHOT_SWEEP_MAX_ENTRIES = 10_000;

export interface SnapshotArchiveStoreOptions {
  /** Where the archives live (`<dir>/<id>.tar.gz`); created 0700 on first use. */
  readonly dir: string;
  /** The `SnapshotRef.provider` this store makes and accepts (another kind is refused). */
  readonly provider: string;
  readonly limits?: Partial<CheckpointLimits> | undefined;
  /** A snapshot's life in seconds; 0 or absent: it does not expire. */
  readonly ttlSeconds?: number | undefined;
  readonly clock?: Clock | undefined;
  readonly logger?: Logger | undefined;
}

/**
 * Workspace checkpoints of threads kept as files (the checkpoint format of this folder), for a
 * provider whose thread data lies on the gateway host.
 *
 * A snapshot is written to a temporary name and renamed when complete, so a failed or bounded-out
 * export never leaves a usable-looking archive; a restore goes through the untrusted-archive import
 * (a snapshot file on disk is data the gateway does not re-trust).
 *
 * Expiry: the archive's modification time is set to its creation time on the store's clock, and a
 * snapshot older than `ttlSeconds` is refused (`SnapshotExpiredError`) and removed by `sweep`. The
 * `expiresAt` a reference carries is informational: a reference comes from callers and storage, so
 * the store decides from its own file, never from the reference.
 */
export class SnapshotArchiveStore {
  readonly dir: string;
  readonly provider: string;
  readonly #limits: Partial<CheckpointLimits> | undefined;
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;

  constructor(options: SnapshotArchiveStoreOptions) {
    this.dir = options.dir;
    this.provider = options.provider;
    this.#limits = options.limits;
    const ttl = options.ttlSeconds ?? 0;
    if (!Number.isFinite(ttl) || ttl < 0) {
      throw new InvalidArgumentError('ttlSeconds must be a finite number >= 0');
    }
    this.#ttlMs = ttl * 1000;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
  }

  /** Where a checked snapshot id's archive lives. */
  archivePath(id: string): string {
    return path.join(this.dir, `${id}.tar.gz`);
  }

  /** Records `layout`'s thread data (workspace, uploads, outputs) as a new snapshot. */
  async create(layout: ThreadLayout): Promise<SnapshotRef> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const id = `snap-${randomBytes(16).toString('hex')}`;
    const final = this.archivePath(id);
    const partial = `${final}.partial`;
    const now = this.#clock.now();
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
      const at = new Date(now);
      await utimes(partial, at, at);
      await rename(partial, final);
      return {
        provider: this.provider,
        id,
        createdAt: at.toISOString(),
        sizeBytes: summary.archiveBytes,
        ...(this.#ttlMs > 0 ? { expiresAt: new Date(now + this.#ttlMs).toISOString() } : {}),
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
    const archive = await this.#liveArchive(id);
    if (await exists(layout.userDataPath)) {
      throw new InvalidArgumentError('fromSnapshot needs a thread that has no data yet', {
        details: { snapshot_id: id },
      });
    }
    await mkdir(layout.threadDir, { recursive: true });
    await readCheckpoint(createReadStream(archive), layout.userDataPath, { limits: this.#limits });
  }

  /**
   * Checks that `ref` names a snapshot of this store that exists and has not expired, before any
   * other work (a forged or stale reference creates nothing).
   */
  async check(ref: SnapshotRef): Promise<string> {
    const id = this.checkedId(ref);
    await this.#liveArchive(id);
    return id;
  }

  /** The id of a reference from a caller or storage, checked once, here. */
  checkedId(ref: SnapshotRef): string {
    if (typeof ref !== 'object' || ref === null || ref.provider !== this.provider) {
      throw new InvalidArgumentError(`not a snapshot of the ${this.provider} provider`);
    }
    if (typeof ref.id !== 'string' || !SNAPSHOT_ID.test(ref.id)) {
      throw new InvalidArgumentError('malformed snapshot id');
    }
    return ref.id;
  }

  /**
   * Removes expired snapshots (and temporary files of exports that died mid-way, once they are as
   * old as a snapshot's life); returns the ids removed. Without a ttl it removes nothing. Looks at
   * `SNAPSHOT_SWEEP_MAX_ENTRIES` directory entries at most per pass.
   */
  async sweep(): Promise<string[]> {
    if (this.#ttlMs <= 0) return [];
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if (codeOf(err) === 'ENOENT') return [];
      throw err;
    }
    const removed: string[] = [];
    for (const name of names.slice(0, SNAPSHOT_SWEEP_MAX_ENTRIES)) {
      const match = ARCHIVE.exec(name) ?? /^(snap-[0-9a-f]{32})\.tar\.gz\.partial$/.exec(name);
      if (match === null) continue;
      const file = path.join(this.dir, name);
      const stat = await lstat(file).catch((err: unknown) => {
        if (codeOf(err) === 'ENOENT') return undefined;
        throw err;
      });
      if (stat === undefined || !stat.isFile() || !this.#expired(stat.mtimeMs)) continue;
      await rm(file, { force: true });
      if (!name.endsWith('.partial')) removed.push(match[1]!);
    }
    if (removed.length > 0) {
      this.#logger.info('Removed expired snapshots', { count: removed.length, dir: this.dir });
    }
    return removed;
  }

  #expired(mtimeMs: number): boolean {
    return this.#ttlMs > 0 && this.#clock.now() >= mtimeMs + this.#ttlMs;
  }

  async #liveArchive(id: string): Promise<string> {
    const archive = this.archivePath(id);
    let stat;
    try {
      stat = await lstat(archive);
    } catch (err) {
      if (codeOf(err) === 'ENOENT') throw new SnapshotNotFoundError(id);
      throw err;
    }
    // Only a regular file the store wrote; a link or directory planted under the name is not one.
    if (!stat.isFile()) throw new SnapshotNotFoundError(id);
    if (this.#expired(stat.mtimeMs)) {
      throw new SnapshotExpiredError(id, new Date(stat.mtimeMs + this.#ttlMs).toISOString());
    }
    return archive;
  }
}

function codeOf(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}

async function exists(target: string): Promise<boolean> {
  try {
    await lstat(target);
    return true;
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return false;
    throw err;
  }
}
