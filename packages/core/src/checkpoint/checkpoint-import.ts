import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, realpath, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as Zlib from 'node:zlib';
import type * as TarStream from 'tar-stream';
import { lazyModule } from '../modules/lazy-module.js';
import {
  CheckpointEntryRefusedError,
  CheckpointIntegrityError,
  CheckpointLimitError,
} from '../errors/checkpoint-errors.js';
import { InvalidArgumentError, isSbxError } from '../errors/errors.js';
import { ensureDirectoryConfined, openConfined } from '../host/host-confinement.js';
import { ByteMeter } from './byte-meter.js';
import {
  CHECKPOINT_MANIFEST_NAME,
  CHECKPOINT_ROOTS,
  assertEntryName,
  maxExpandedBytes,
  maxManifestBytes,
  parseManifest,
  resolveCheckpointLimits,
  treeDigest,
  type CheckpointLimits,
  type CheckpointManifest,
  type CheckpointManifestEntry,
} from './checkpoint-format.js';

// Loaded by the first checkpoint, not with @sbx/core: most hosts never write one.
const tarStream = lazyModule<typeof TarStream>('tar-stream');
const zlib = lazyModule<typeof Zlib>('node:zlib');

export interface ReadCheckpointOptions {
  limits?: Partial<CheckpointLimits>;
  /** The archive's sha256 as recorded when it was made; a different archive is refused. */
  expectedArchiveSha256?: string;
  signal?: AbortSignal;
}

export interface CheckpointImportSummary {
  readonly files: number;
  readonly directories: number;
  readonly totalBytes: number;
  readonly treeSha256: string;
  readonly archiveSha256: string;
  /** The three thread directories, created (empty) when the archive had none of one. */
  readonly destination: string;
}

/**
 * Restores a checkpoint archive from an untrusted stream into `destination`, a directory that must
 * not exist yet (its parent must): afterwards it holds `workspace/`, `uploads/` and `outputs/`.
 *
 * Refused, with a typed error, and leaving nothing behind: names that could leave the destination,
 * links of any kind (symbolic or hard: a checkpoint holds data, never references), devices, FIFOs,
 * sockets, duplicates, an entry or a total over the limits (checked on the header, before its
 * bytes are read), decompressed bytes beyond what such an archive can hold (a gzip bomb stops at
 * that bound), any entry after the manifest, and any mismatch with the manifest's sizes and
 * checksums. Everything is written into a fresh staging directory beside `destination`, through
 * descriptors verified to lie in it, and renamed into place only once every check has passed.
 */
export async function readCheckpoint(
  input: Readable,
  destination: string,
  options: ReadCheckpointOptions = {},
): Promise<CheckpointImportSummary> {
  const limits = resolveCheckpointLimits(options.limits);
  if (!path.isAbsolute(destination)) {
    throw new InvalidArgumentError('checkpoint destination must be an absolute path');
  }
  const parent = await realpath(path.dirname(destination));
  const target = path.join(parent, path.basename(destination));
  if (await exists(target)) {
    throw new InvalidArgumentError('checkpoint destination already exists', {
      details: { destination: target },
    });
  }
  const staging = path.join(
    parent,
    `.${path.basename(target)}.checkpoint-${randomBytes(8).toString('hex')}`,
  );
  await mkdir(staging, { mode: 0o700 });
  try {
    const summary = await extractInto(input, staging, limits, options);
    for (const root of CHECKPOINT_ROOTS) {
      await ensureDirectoryConfined(staging, path.join(staging, root), root);
    }
    await rename(staging, target);
    return { ...summary, destination: target };
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw asCheckpointError(err);
  }
}

async function extractInto(
  input: Readable,
  staging: string,
  limits: CheckpointLimits,
  options: ReadCheckpointOptions,
): Promise<Omit<CheckpointImportSummary, 'destination'>> {
  const archive = new ByteMeter();
  const expanded = new ByteMeter({ limit: 'expandedBytes', max: maxExpandedBytes(limits) });
  const extract = tarStream().extract();
  const piped = pipeline(input, archive, zlib().createGunzip(), expanded, extract, {
    signal: options.signal,
  });
  // Observed at once; its failure (corrupt gzip, the expansion bound) is rethrown below.
  let pipeFailure: unknown;
  piped.catch((err: unknown) => {
    pipeFailure = err;
    extract.destroy(err instanceof Error ? err : new Error(String(err)));
  });

  const seenFiles = new Set<string>();
  const seenDirectories = new Set<string>();
  const written: CheckpointManifestEntry[] = [];
  let manifest: CheckpointManifest | undefined;
  let totalBytes = 0;
  // Directories this import made and verified: the staging directory is fresh and private (0700,
  // beside the destination, outside any sandbox's view), so one that was verified stays so.
  const ensured = new Set<string>([staging]);
  const ensureDirectory = async (dir: string, shown: string) => {
    if (ensured.has(dir)) return;
    await ensureDirectoryConfined(staging, dir, shown);
    ensured.add(dir);
  };

  try {
    for await (const entry of extract) {
      const header = entry.header;
      if (manifest) throw new CheckpointEntryRefusedError(header.name, 'entry after the manifest');
      if (header.type === 'file' && header.name === CHECKPOINT_MANIFEST_NAME) {
        const size = header.size ?? 0;
        if (size > maxManifestBytes(limits)) {
          throw new CheckpointLimitError('entries', limits.maxEntries);
        }
        manifest = parseManifest(await collect(entry as AsyncIterable<Buffer>));
        continue;
      }
      if (header.type !== 'file' && header.type !== 'directory') {
        throw new CheckpointEntryRefusedError(
          header.name,
          `${header.type ?? 'unknown'} entries are refused`,
        );
      }
      const name = header.type === 'directory' ? header.name.replace(/\/$/, '') : header.name;
      assertEntryName(name);
      if (written.length + 1 > limits.maxEntries) {
        throw new CheckpointLimitError('entries', limits.maxEntries);
      }
      if (seenFiles.has(name) || seenDirectories.has(name)) {
        throw new CheckpointEntryRefusedError(name, 'duplicate entry');
      }
      const segments = name.split('/');
      for (let i = 1; i < segments.length; i += 1) {
        if (seenFiles.has(segments.slice(0, i).join('/'))) {
          throw new CheckpointEntryRefusedError(name, 'entry below a file');
        }
      }
      const hostPath = path.join(staging, ...segments);
      if (header.type === 'directory') {
        await ensureDirectory(hostPath, name);
        entry.resume();
        seenDirectories.add(name);
        written.push({ path: name, type: 'directory', size: 0, sha256: '', executable: true });
        continue;
      }
      const size = header.size ?? 0;
      if (size > limits.maxEntryBytes)
        throw new CheckpointLimitError('entryBytes', limits.maxEntryBytes);
      if (totalBytes + size > limits.maxTotalBytes) {
        throw new CheckpointLimitError('totalBytes', limits.maxTotalBytes);
      }
      totalBytes += size;
      await ensureDirectory(path.dirname(hostPath), name);
      const executable = ((header.mode ?? 0) & 0o100) !== 0;
      const handle = await openConfined(hostPath, {
        root: staging,
        access: 'write',
        shown: name,
        operation: 'import',
      });
      const hash = createHash('sha256');
      let received = 0;
      try {
        await handle.chmod(executable ? 0o755 : 0o644);
        // One chunk at a time, each written before the next is read: memory stays one chunk.
        for await (const chunk of entry as unknown as AsyncIterable<Buffer>) {
          received += chunk.length;
          if (received > size) throw new CheckpointLimitError('entryBytes', size);
          hash.update(chunk);
          await handle.write(chunk);
        }
      } finally {
        await handle.close();
      }
      seenFiles.add(name);
      written.push({ path: name, type: 'file', size, sha256: hash.digest('hex'), executable });
    }
    await piped;
  } catch (err) {
    // Our own refusal wins; otherwise the pipeline's cause (the iterator only sees its echo).
    throw isSbxError(err) ? err : (pipeFailure ?? err);
  }
  if (pipeFailure) throw pipeFailure;
  if (!manifest) throw new CheckpointIntegrityError('Checkpoint has no manifest');
  verifyAgainstManifest(manifest, written, totalBytes);
  const archiveSha256 = archive.digest();
  if (
    options.expectedArchiveSha256 !== undefined &&
    options.expectedArchiveSha256 !== archiveSha256
  ) {
    throw new CheckpointIntegrityError('Checkpoint archive checksum mismatch');
  }
  return {
    files: seenFiles.size,
    directories: seenDirectories.size,
    totalBytes,
    treeSha256: manifest.treeSha256,
    archiveSha256,
  };
}

function verifyAgainstManifest(
  manifest: CheckpointManifest,
  written: readonly CheckpointManifestEntry[],
  totalBytes: number,
): void {
  if (treeDigest(manifest.entries) !== manifest.treeSha256) {
    throw new CheckpointIntegrityError('Checkpoint manifest digest mismatch');
  }
  if (manifest.entries.length !== written.length || manifest.totalBytes !== totalBytes) {
    throw new CheckpointIntegrityError('Checkpoint content does not match its manifest');
  }
  // Same entries in the same order, each with the bytes the manifest names.
  if (treeDigest(written) !== manifest.treeSha256) {
    const at = written.findIndex((w, i) => {
      const m = manifest.entries[i]!;
      return m.path !== w.path || m.type !== w.type || m.size !== w.size || m.sha256 !== w.sha256;
    });
    throw new CheckpointIntegrityError('Checkpoint checksum mismatch', {
      details: { entry: JSON.stringify((written[at]?.path ?? '').slice(0, 200)) },
    });
  }
}

async function collect(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
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

/** Corrupt gzip or tar (the libraries' plain errors) reported as what they are: not a checkpoint. */
function asCheckpointError(err: unknown): unknown {
  if (isSbxError(err)) return err;
  return new CheckpointIntegrityError('Not a readable checkpoint archive', { cause: err });
}
