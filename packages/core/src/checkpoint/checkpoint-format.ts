import { createHash } from 'node:crypto';
import {
  CheckpointEntryRefusedError,
  CheckpointIntegrityError,
} from '../errors/checkpoint-errors.js';
import { InvalidArgumentError } from '../errors/errors.js';

/**
 * A workspace checkpoint is a gzip-compressed tar stream: the thread's three data directories under
 * their own names (`workspace/`, `uploads/`, `outputs/`), regular files and directories only, and
 * last the manifest `sbx-checkpoint.json` (format, version, one line per entry with its size and
 * sha256, and the digest of those lines). The manifest comes last so an export streams in one pass;
 * an import stages everything and checks it against the manifest before anything becomes visible.
 */
export const CHECKPOINT_FORMAT = 'sbx-checkpoint';
export const CHECKPOINT_VERSION = 1;
export const CHECKPOINT_MANIFEST_NAME = 'sbx-checkpoint.json';
export const CHECKPOINT_ROOTS = ['workspace', 'uploads', 'outputs'] as const;
export type CheckpointRootName = (typeof CHECKPOINT_ROOTS)[number];

export interface CheckpointLimits {
  /** Sum of the file sizes. Default 1 GiB. */
  readonly maxTotalBytes: number;
  /** Files plus directories. Default 100 000. */
  readonly maxEntries: number;
  /** One file. Default: `maxTotalBytes`. */
  readonly maxEntryBytes: number;
}

export const DEFAULT_CHECKPOINT_LIMITS: CheckpointLimits = {
  maxTotalBytes: 1024 * 1024 * 1024,
  maxEntries: 100_000,
  maxEntryBytes: 1024 * 1024 * 1024,
};

/** The caller's limits over the defaults, each a positive safe integer. */
export function resolveCheckpointLimits(limits: Partial<CheckpointLimits> = {}): CheckpointLimits {
  const out = { ...DEFAULT_CHECKPOINT_LIMITS, ...limits };
  if (limits.maxEntryBytes === undefined) out.maxEntryBytes = out.maxTotalBytes;
  for (const [key, value] of Object.entries(out)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new InvalidArgumentError(`checkpoint limit ${key} must be a positive integer`);
    }
  }
  return out;
}

// Tar framing around the file bytes: a header, a pax header with its body for a long name, and
// padding to 512 bytes, per entry; plus the end blocks. Decompressed bytes beyond the file bytes
// and this allowance cannot belong to an archive within the limits: a gzip bomb, stopped there.
const FRAMING_PER_ENTRY = 512 + 512 + 5 * 1024 + 512;
export const MAX_MANIFEST_BYTES_PER_ENTRY = 8 * 1024;

export function maxManifestBytes(limits: CheckpointLimits): number {
  return 64 * 1024 + limits.maxEntries * MAX_MANIFEST_BYTES_PER_ENTRY;
}

export function maxExpandedBytes(limits: CheckpointLimits): number {
  return (
    limits.maxTotalBytes + (limits.maxEntries + 2) * FRAMING_PER_ENTRY + maxManifestBytes(limits)
  );
}

export interface CheckpointManifestEntry {
  readonly path: string;
  readonly type: 'file' | 'directory';
  readonly size: number;
  /** Of the file's bytes; empty for a directory. */
  readonly sha256: string;
  readonly executable: boolean;
}

export interface CheckpointManifest {
  readonly format: typeof CHECKPOINT_FORMAT;
  readonly version: typeof CHECKPOINT_VERSION;
  readonly createdAt: string;
  readonly totalBytes: number;
  /** sha256 of the entries' lines (`treeLine`), in archive order: the whole content's checksum. */
  readonly treeSha256: string;
  readonly entries: readonly CheckpointManifestEntry[];
}

/** One entry's line of the tree digest; JSON, so no name can forge a line break. */
export function treeLine(entry: CheckpointManifestEntry): string {
  return `${JSON.stringify([entry.type, entry.path, entry.size, entry.sha256, entry.executable])}\n`;
}

export function treeDigest(entries: readonly CheckpointManifestEntry[]): string {
  const hash = createHash('sha256');
  for (const entry of entries) hash.update(treeLine(entry));
  return hash.digest('hex');
}

const MAX_NAME_BYTES = 4096;
const MAX_SEGMENT_BYTES = 255;

/**
 * Why `name` (an archive entry's, without a directory's trailing `/`) cannot be written below a
 * destination, or `undefined` when it can: it must be relative, in one of the three thread
 * directories, with no empty, `.` or `..` segment, no backslash (a separator elsewhere) and no NUL.
 */
export function entryNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'empty name';
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return 'name too long';
  if (name.includes('\0')) return 'NUL in name';
  if (name.includes('\\')) return 'backslash in name';
  if (name.startsWith('/')) return 'absolute name';
  const segments = name.split('/');
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') return 'traversal segment in name';
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) return 'name segment too long';
  }
  if (!(CHECKPOINT_ROOTS as readonly string[]).includes(segments[0]!)) {
    return 'name outside workspace, uploads and outputs';
  }
  return undefined;
}

export function assertEntryName(name: string): void {
  const problem = entryNameProblem(name);
  if (problem) throw new CheckpointEntryRefusedError(name, problem);
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The manifest of an untrusted archive, checked field by field. */
export function parseManifest(bytes: Buffer): CheckpointManifest {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new CheckpointIntegrityError('Checkpoint manifest is not JSON', { cause: err });
  }
  const bad = (what: string) => new CheckpointIntegrityError(`Checkpoint manifest: ${what}`);
  if (typeof value !== 'object' || value === null) throw bad('not an object');
  const m = value as Record<string, unknown>;
  if (m.format !== CHECKPOINT_FORMAT) throw bad('not an sbx checkpoint');
  if (m.version !== CHECKPOINT_VERSION) {
    throw bad(`unsupported version ${JSON.stringify(m.version)?.slice(0, 20)}`);
  }
  if (typeof m.treeSha256 !== 'string' || !SHA256_HEX.test(m.treeSha256)) throw bad('treeSha256');
  if (!Number.isSafeInteger(m.totalBytes)) throw bad('totalBytes');
  if (typeof m.createdAt !== 'string') throw bad('createdAt');
  if (!Array.isArray(m.entries)) throw bad('entries');
  const entries: CheckpointManifestEntry[] = [];
  for (const raw of m.entries as unknown[]) {
    const e = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    if (typeof e.path !== 'string') throw bad('entry path');
    if (e.type !== 'file' && e.type !== 'directory') throw bad('entry type');
    if (!Number.isSafeInteger(e.size) || (e.size as number) < 0) throw bad('entry size');
    if (typeof e.sha256 !== 'string') throw bad('entry sha256');
    if (typeof e.executable !== 'boolean') throw bad('entry executable');
    entries.push({
      path: e.path,
      type: e.type,
      size: e.size as number,
      sha256: e.sha256,
      executable: e.executable,
    });
  }
  return {
    format: CHECKPOINT_FORMAT,
    version: CHECKPOINT_VERSION,
    createdAt: m.createdAt,
    totalBytes: m.totalBytes as number,
    treeSha256: m.treeSha256,
    entries,
  };
}
