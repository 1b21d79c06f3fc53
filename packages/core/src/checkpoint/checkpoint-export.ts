import { constants, type Dirent } from 'node:fs';
import { open, opendir, readlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable, type Writable } from 'node:stream';
import type * as Zlib from 'node:zlib';
import type * as TarStream from 'tar-stream';
import { lazyModule } from '../modules/lazy-module.js';
import { CheckpointLimitError } from '../errors/checkpoint-errors.js';
import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxPermissionError,
} from '../errors/errors.js';
import { openConfined } from '../host/host-confinement.js';
import { isInsideRoot } from '../paths/path-mapping-realpath.js';
import { ByteMeter } from './byte-meter.js';
import {
  CHECKPOINT_FORMAT,
  CHECKPOINT_MANIFEST_NAME,
  CHECKPOINT_ROOTS,
  CHECKPOINT_VERSION,
  entryNameProblem,
  resolveCheckpointLimits,
  treeDigest,
  type CheckpointLimits,
  type CheckpointManifest,
  type CheckpointManifestEntry,
  type CheckpointRootName,
} from './checkpoint-format.js';

// Loaded by the first checkpoint, not with @sbx/core: most hosts never write one.
const tarStream = lazyModule<typeof TarStream>('tar-stream');
const zlib = lazyModule<typeof Zlib>('node:zlib');

/** Canonical host directories of a thread's data; an absent one is left out of the archive. */
export type CheckpointSources = Partial<Record<CheckpointRootName, string>>;

export interface WriteCheckpointOptions {
  limits?: Partial<CheckpointLimits>;
  signal?: AbortSignal;
}

/** What an export left out: links, devices, FIFOs, sockets and names an import would refuse. */
export interface SkippedEntry {
  readonly path: string;
  readonly reason: string;
}

export interface CheckpointSummary {
  readonly files: number;
  readonly directories: number;
  readonly totalBytes: number;
  readonly treeSha256: string;
  /** sha256 and size of the compressed archive as written. */
  readonly archiveSha256: string;
  readonly archiveBytes: number;
  /** The first 100 entries left out, and how many in all. */
  readonly skipped: readonly SkippedEntry[];
  readonly skippedCount: number;
}

const MAX_SKIPPED_LISTED = 100;
const HAS_PROC_FD = process.platform === 'linux';
const DIRECTORY_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | constants.O_NOFOLLOW;

/**
 * Streams the thread's data directories into `output` as a checkpoint archive (see
 * checkpoint-format.ts), counting files and bytes against the limits as it goes: at a limit it
 * fails with `CheckpointLimitError` and the output so far must be discarded. Links are never
 * followed or stored (the sandbox may point them anywhere on the host); they, devices, FIFOs and
 * sockets are left out and listed in the summary. Each directory and file is verified after it is
 * opened to still lie in its root, so a link swapped in during the walk is refused, not followed.
 */
export async function writeCheckpoint(
  sources: CheckpointSources,
  output: Writable,
  options: WriteCheckpointOptions = {},
): Promise<CheckpointSummary> {
  const limits = resolveCheckpointLimits(options.limits);
  for (const [name, dir] of Object.entries(sources)) {
    if (!(CHECKPOINT_ROOTS as readonly string[]).includes(name) || !path.isAbsolute(dir)) {
      throw new InvalidArgumentError(`checkpoint source ${name} must be an absolute directory`);
    }
  }
  const pack = tarStream().pack();
  const archive = new ByteMeter();
  const piped = pipeline(pack, zlib().createGzip(), archive, output, { signal: options.signal });
  // Kept observed: a failure of the output surfaces through `piped` once awaited below.
  piped.catch(() => undefined);

  const entries: CheckpointManifestEntry[] = [];
  const skipped: SkippedEntry[] = [];
  let skippedCount = 0;
  let totalBytes = 0;
  const skip = (entryPath: string, reason: string) => {
    skippedCount += 1;
    if (skipped.length < MAX_SKIPPED_LISTED) skipped.push({ path: entryPath, reason });
  };
  const count = () => {
    if (entries.length + 1 > limits.maxEntries) {
      throw new CheckpointLimitError('entries', limits.maxEntries);
    }
  };

  const addFile = async (root: string, hostPath: string, name: string) => {
    let handle: FileHandle;
    try {
      handle = await openConfined(hostPath, {
        root,
        access: 'read',
        shown: name,
        operation: 'export',
      });
    } catch (err) {
      // A FIFO, socket or device (swapped in after the listing, or unseen by it): left out.
      if (err instanceof SandboxFileError && err.kind === 'EINVAL') {
        return skip(name, 'not a regular file');
      }
      throw err;
    }
    try {
      const stats = await handle.stat();
      if (stats.size > limits.maxEntryBytes) {
        throw new CheckpointLimitError('entryBytes', limits.maxEntryBytes);
      }
      if (totalBytes + stats.size > limits.maxTotalBytes) {
        throw new CheckpointLimitError('totalBytes', limits.maxTotalBytes);
      }
      count();
      totalBytes += stats.size;
      const executable = (stats.mode & 0o100) !== 0;
      const meter = new ByteMeter();
      const entry = pack.entry({
        name,
        type: 'file',
        size: stats.size,
        mode: executable ? 0o755 : 0o644,
        mtime: stats.mtime,
      });
      // Exactly the size in the header: a file that grows meanwhile is cut, one that shrinks
      // fails the entry (tar-stream checks the size), never a corrupt archive passed as good.
      const source =
        stats.size === 0
          ? Readable.from([])
          : handle.createReadStream({ start: 0, end: stats.size - 1, autoClose: false });
      await pipeline(source, meter, entry);
      entries.push({
        path: name,
        type: 'file',
        size: stats.size,
        sha256: meter.digest(),
        executable,
      });
    } finally {
      await handle.close();
    }
  };

  const addDirectory = async (root: string, hostDir: string, name: string): Promise<void> => {
    const dir = await openVerifiedDirectory(root, hostDir, name);
    let children: Dirent[] = [];
    try {
      const listing = await opendir(HAS_PROC_FD ? `/proc/self/fd/${dir.fd}` : hostDir);
      for await (const child of listing) {
        // Bounded as read: a directory of millions of names fails here, not after listing them.
        if (entries.length + children.length + 1 > limits.maxEntries) {
          throw new CheckpointLimitError('entries', limits.maxEntries);
        }
        children.push(child);
      }
    } finally {
      await dir.close();
    }
    count();
    entries.push({ path: name, type: 'directory', size: 0, sha256: '', executable: true });
    pack.entry({ name: `${name}/`, type: 'directory', mode: 0o755 });
    children = children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const child of children) {
      options.signal?.throwIfAborted();
      const childName = `${name}/${child.name}`;
      const problem = entryNameProblem(childName);
      if (problem) {
        skip(childName, problem);
        continue;
      }
      const childPath = path.join(hostDir, child.name);
      if (child.isDirectory()) await addDirectory(root, childPath, childName);
      else if (child.isFile()) await addFile(root, childPath, childName);
      else skip(childName, child.isSymbolicLink() ? 'link' : 'not a regular file');
    }
  };

  try {
    for (const root of CHECKPOINT_ROOTS) {
      const dir = sources[root];
      if (dir !== undefined) await addDirectory(dir, dir, root);
    }
    const manifest: CheckpointManifest = {
      format: CHECKPOINT_FORMAT,
      version: CHECKPOINT_VERSION,
      createdAt: new Date().toISOString(),
      totalBytes,
      treeSha256: treeDigest(entries),
      entries,
    };
    pack.entry(
      { name: CHECKPOINT_MANIFEST_NAME, type: 'file', mode: 0o644 },
      JSON.stringify(manifest),
    );
    pack.finalize();
    await piped;
  } catch (err) {
    pack.destroy(err instanceof Error ? err : new Error(String(err)));
    await piped.catch(() => undefined);
    throw err;
  }
  return {
    files: entries.filter((e) => e.type === 'file').length,
    directories: entries.filter((e) => e.type === 'directory').length,
    totalBytes,
    treeSha256: treeDigest(entries),
    archiveSha256: archive.digest(),
    archiveBytes: archive.bytes,
    skipped,
    skippedCount,
  };
}

/** Opens a directory without following a link, and checks where it really is. */
async function openVerifiedDirectory(
  root: string,
  hostDir: string,
  shown: string,
): Promise<FileHandle> {
  const handle = await open(hostDir, DIRECTORY_FLAGS);
  try {
    if (HAS_PROC_FD) {
      const real = await readlink(`/proc/self/fd/${handle.fd}`);
      if (!isInsideRoot(real, root)) {
        throw new SandboxPermissionError('Checkpoint source left its directory', { path: shown });
      }
    }
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}
