import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import {
  CapabilityNotSupportedError,
  InvalidArgumentError,
  ensureSandboxInitialized,
  readCheckpoint,
  writeCheckpoint,
  type CheckpointLimits,
  type ThreadDataPaths,
  type ToolContext,
} from '@sbx/core';
import type { SandboxArchiveLimits, WorkspaceArchiveData } from '@openai/agents/sandbox';

/**
 * Largest workspace archive `persistWorkspace` returns and `hydrateWorkspace` takes, compressed:
 * the SDK hands the archive around as one byte array, so it is held in memory whole.
 */
export const MAX_WORKSPACE_ARCHIVE_BYTES = 256 * 1024 * 1024;

/** Largest workspace, uncompressed, either way (file bytes together). */
export const MAX_WORKSPACE_EXTRACTED_BYTES = 1024 * 1024 * 1024;

/** Most files and directories in one workspace archive. */
export const MAX_WORKSPACE_MEMBERS = 100_000;

/** A provider whose sandboxes are directories on this host (`@sbx/local`), known by its shape. */
interface HostThreadProvider {
  readonly baseDir: string;
  threadData(userId: string | undefined, threadId: string): ThreadDataPaths;
}

function isHostThreadProvider(provider: unknown): provider is HostThreadProvider {
  const p = provider as Partial<Record<keyof HostThreadProvider, unknown>>;
  return typeof p.baseDir === 'string' && typeof p.threadData === 'function';
}

/**
 * The thread's workspace directory on this host. A checkpoint reads and writes host directories;
 * other providers do not export their workspace yet, so persisting or hydrating is refused there.
 */
function hostWorkspace(context: ToolContext): string {
  const provider: unknown = context.provider;
  const threadId = context.threadId;
  const workspace =
    isHostThreadProvider(provider) && threadId !== undefined
      ? provider.threadData(context.userId, threadId).workspacePath
      : undefined;
  if (workspace === undefined) {
    throw CapabilityNotSupportedError.lifecycle(
      context.provider.constructor.name,
      'snapshot',
      'persisting a workspace reaches thread data on this host only (the local provider)',
    );
  }
  return workspace;
}

/** sbx's limits, lowered (never raised) by the SDK's archive limits. */
function limitsOf(sdk: SandboxArchiveLimits | null | undefined): {
  input: number;
  checkpoint: Partial<CheckpointLimits>;
} {
  const lower = (ours: number, theirs: number | null | undefined) =>
    typeof theirs === 'number' && Number.isSafeInteger(theirs) && theirs > 0
      ? Math.min(ours, theirs)
      : ours;
  return {
    input: lower(MAX_WORKSPACE_ARCHIVE_BYTES, sdk?.maxInputBytes),
    checkpoint: {
      maxTotalBytes: lower(MAX_WORKSPACE_EXTRACTED_BYTES, sdk?.maxExtractedBytes),
      maxEntries: lower(MAX_WORKSPACE_MEMBERS, sdk?.maxMembers),
    },
  };
}

/**
 * The thread's workspace as an sbx checkpoint archive (gzip tar with its manifest; links, devices
 * and other special files left out, see docs/snapshots.md), within the limits.
 *
 * @throws CapabilityNotSupportedError off a host-directory provider; CheckpointLimitError or
 *   InvalidArgumentError past a limit (nothing returned)
 */
export async function persistWorkspace(
  context: ToolContext,
  sdkLimits: SandboxArchiveLimits | null | undefined,
): Promise<Uint8Array> {
  await ensureSandboxInitialized(context);
  const workspace = hostWorkspace(context);
  const limits = limitsOf(sdkLimits);
  const chunks: Buffer[] = [];
  let size = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > limits.input) {
        done(
          new InvalidArgumentError(
            `the workspace archive is over ${limits.input} bytes compressed`,
          ),
        );
        return;
      }
      chunks.push(chunk);
      done();
    },
  });
  await writeCheckpoint({ workspace }, sink, { limits: limits.checkpoint });
  return Buffer.concat(chunks);
}

function archiveBytes(data: WorkspaceArchiveData, max: number): Buffer {
  // A string is taken as base64, the SDK's text form of binary data.
  const size = typeof data === 'string' ? Math.floor((data.length * 3) / 4) : data.byteLength;
  if (size > max) {
    throw new InvalidArgumentError(`the workspace archive is over ${max} bytes`);
  }
  if (typeof data === 'string') return Buffer.from(data, 'base64');
  return data instanceof ArrayBuffer
    ? Buffer.from(data)
    : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Restores an archive — untrusted: refused, typed, for anything a checkpoint import refuses —
 * as the thread's workspace, which must be empty: the import is staged beside it and renamed in
 * only once complete, so a refused archive leaves the workspace as it was.
 *
 * @throws CapabilityNotSupportedError off a host-directory provider; InvalidArgumentError for a
 *   workspace that has files, or an archive with data outside `workspace/`; the checkpoint errors
 */
export async function hydrateWorkspace(
  context: ToolContext,
  data: WorkspaceArchiveData,
  sdkLimits: SandboxArchiveLimits | null | undefined,
): Promise<void> {
  const limits = limitsOf(sdkLimits);
  const bytes = archiveBytes(data, limits.input);
  await ensureSandboxInitialized(context);
  const workspace = hostWorkspace(context);
  if ((await readdir(workspace)).length > 0) {
    throw new InvalidArgumentError('hydrateWorkspace needs an empty workspace');
  }
  const staging = path.join(path.dirname(workspace), `.sbx-hydrate-${randomUUID()}`);
  try {
    await readCheckpoint(Readable.from([bytes]), staging, { limits: limits.checkpoint });
    for (const root of ['uploads', 'outputs']) {
      if ((await readdir(path.join(staging, root))).length > 0) {
        throw new InvalidArgumentError(`a workspace archive holds no ${root}/ data`);
      }
    }
    // Fails (ENOTEMPTY) if a file appeared in the workspace meanwhile: nothing is overwritten.
    await rmdir(workspace);
    try {
      await rename(path.join(staging, 'workspace'), workspace);
    } catch (err) {
      // The thread keeps a workspace, empty as it was, rather than none.
      await mkdir(workspace, { recursive: true });
      throw err;
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
