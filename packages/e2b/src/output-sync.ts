import { mkdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { shellQuote, silentLogger } from '@sbx/core';
import { VIRTUAL_PATH_PREFIX } from '@sbx/core/internal';
import type { Clock, Logger } from '@sbx/core';
import type { E2BSandbox } from './e2b-sandbox.js';
import { MAX_DOWNLOAD_BYTES } from './e2b-sandbox.js';
import { commandExitResult, errorMessage, isSandboxGoneError } from './e2b-errors.js';

export const OUTPUT_SYNC_MANIFEST = '.e2b-output-sync.json';
export const MAX_SYNC_FILES = 2000;
export const MAX_SYNC_TOTAL_BYTES = 512 * 1024 * 1024;
export const SYNC_DEADLINE_SECONDS = 120;
const SYNCED_SUBDIRS = ['outputs', 'workspace'] as const;

/** Per file: sizes in bytes, mtimes in integer nanoseconds as decimal text (exact beyond 2^53). */
export interface ManifestEntry {
  remote_size: number;
  remote_mtime_ns: string;
  host_size: number;
  host_mtime_ns: string;
}

export interface OutputManifest {
  version: 1;
  sandbox_id: string;
  files: Record<string, ManifestEntry>;
}

export interface OutputSyncOptions {
  clock: Pick<Clock, 'now'>;
  logger?: Logger;
  maxFiles?: number;
  maxBytes?: number;
  deadlineMs?: number;
}

export interface OutputSyncResult {
  downloaded: string[];
  skipped: number;
  truncated: boolean;
}

/** `"1700000000.123"` → nanoseconds as text, exactly (any number of fraction digits). */
export function mtimeToNs(text: string): string | undefined {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) return undefined;
  const frac = ((m[2] ?? '') + '000000000').slice(0, 9);
  return (BigInt(m[1] as string) * 1_000_000_000n + BigInt(frac)).toString();
}

interface RemoteRecord {
  rel: string;
  size: number;
  mtimeNs: string;
}

function parseListing(stdout: string, homeDir: string): RemoteRecord[] {
  const out: RemoteRecord[] = [];
  for (const raw of stdout.split('\0')) {
    // Records are not trimmed: a trailing space is a legal part of a file name.
    if (raw === '' || raw === '\n') continue;
    const record = raw.startsWith('\n') ? raw.slice(1) : raw;
    const [size, mtime, ...rest] = record.split('\t');
    const full = rest.join('\t');
    const sizeNum = Number(size);
    const mtimeNs = mtime === undefined ? undefined : mtimeToNs(mtime);
    if (!Number.isSafeInteger(sizeNum) || mtimeNs === undefined) continue;
    const prefix = `${homeDir}/`;
    if (!full.startsWith(prefix)) continue;
    const rel = full.slice(prefix.length);
    const segments = rel.split('/');
    if (!SYNCED_SUBDIRS.includes(segments[0] as (typeof SYNCED_SUBDIRS)[number])) continue;
    if (segments.length < 2 || segments.some((s) => s === '' || s === '.' || s === '..')) continue;
    out.push({ rel, size: sizeNum, mtimeNs });
  }
  return out;
}

async function loadManifest(
  file: string,
  sandboxId: string,
): Promise<{ manifest: OutputManifest; existed: boolean; dirty: boolean }> {
  const empty: OutputManifest = { version: 1, sandbox_id: sandboxId, files: {} };
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return { manifest: empty, existed: false, dirty: false };
  }
  try {
    const parsed = JSON.parse(text) as Partial<OutputManifest>;
    if (
      parsed.version === 1 &&
      parsed.sandbox_id === sandboxId &&
      parsed.files &&
      typeof parsed.files === 'object'
    ) {
      return {
        manifest: { version: 1, sandbox_id: sandboxId, files: { ...parsed.files } },
        existed: true,
        dirty: false,
      };
    }
  } catch {
    // invalid: rewritten below
  }
  return { manifest: empty, existed: true, dirty: true };
}

async function writeAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${file}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}

/**
 * Mirrors the VM's `outputs` and `workspace` trees into the thread's host directories on release,
 * so artifacts survive the VM. The remote copy is the source of truth: a host file that changed
 * since the last mirror is restored. A manifest of (remote size, remote mtime, host size, host
 * mtime) per file skips unchanged files, also on host filesystems that round mtimes. Budgets bound
 * each pass; a cut pass keeps the manifest entries it did not see, and the next pass continues.
 * Failures are logged, never raised (a release must not fail over a mirror).
 */
export async function syncOutputs(
  sandbox: E2BSandbox,
  threadDir: string,
  options: OutputSyncOptions,
): Promise<OutputSyncResult> {
  const logger = options.logger ?? silentLogger;
  const result: OutputSyncResult = { downloaded: [], skipped: 0, truncated: false };
  const remote = sandbox.client;
  if (remote === undefined || sandbox.isDead) return result;
  const home = sandbox.homeDir;
  const roots = SYNCED_SUBDIRS.map((s) => shellQuote(`${home}/${s}`)).join(' ');
  let stdout: string;
  try {
    stdout = (
      await remote.commands.run(
        `find ${roots} -type f -printf '%s\\t%T@\\t%p\\0' 2>/dev/null; true`,
        { timeoutMs: 60_000 },
      )
    ).stdout;
  } catch (error) {
    const exited = commandExitResult(error);
    if (exited) stdout = exited.stdout;
    else {
      if (isSandboxGoneError(error)) sandbox.markDead();
      logger.warn('e2b output listing failed', {
        sandboxId: sandbox.id,
        error: errorMessage(error),
      });
      return result;
    }
  }
  try {
    const records = parseListing(stdout, home);
    const manifestFile = path.join(threadDir, OUTPUT_SYNC_MANIFEST);
    const {
      manifest,
      existed,
      dirty: startDirty,
    } = await loadManifest(manifestFile, sandbox.remoteId);
    let dirty = startDirty;
    const seen = new Set<string>();
    const maxFiles = options.maxFiles ?? MAX_SYNC_FILES;
    const maxBytes = options.maxBytes ?? MAX_SYNC_TOTAL_BYTES;
    const deadline = options.clock.now() + (options.deadlineMs ?? SYNC_DEADLINE_SECONDS * 1000);
    let files = 0;
    let bytes = 0;
    for (const record of records) {
      seen.add(record.rel);
      if (record.size > MAX_DOWNLOAD_BYTES) continue;
      const host = path.join(threadDir, 'user-data', ...record.rel.split('/'));
      const known = manifest.files[record.rel];
      if (known && known.remote_size === record.size && known.remote_mtime_ns === record.mtimeNs) {
        const s = await stat(host, { bigint: true }).catch(() => undefined);
        if (
          s &&
          Number(s.size) === known.host_size &&
          s.mtimeNs.toString() === known.host_mtime_ns
        ) {
          result.skipped += 1;
          continue;
        }
      }
      if (
        files + 1 > maxFiles ||
        bytes + record.size > maxBytes ||
        options.clock.now() >= deadline
      ) {
        result.truncated = true;
        break;
      }
      files += 1;
      bytes += record.size;
      let data: Uint8Array;
      try {
        data = await sandbox.downloadFile(`${VIRTUAL_PATH_PREFIX}/${record.rel}`);
      } catch (error) {
        if (sandbox.isDead) return result;
        logger.warn('e2b output download failed', { path: record.rel, error: errorMessage(error) });
        continue;
      }
      await mkdir(path.dirname(host), { recursive: true });
      const tmp = `${host}.e2bsync.tmp`;
      await writeFile(tmp, data);
      try {
        const seconds = Number(BigInt(record.mtimeNs) / 1000n) / 1_000_000;
        await utimes(tmp, seconds, seconds);
      } catch (error) {
        logger.debug('Could not restore the remote mtime', {
          path: record.rel,
          error: errorMessage(error),
        });
      }
      await rename(tmp, host);
      const s = await stat(host, { bigint: true });
      manifest.files[record.rel] = {
        remote_size: record.size,
        remote_mtime_ns: record.mtimeNs,
        host_size: Number(s.size),
        host_mtime_ns: s.mtimeNs.toString(),
      };
      dirty = true;
      result.downloaded.push(record.rel);
    }
    if (!result.truncated) {
      for (const rel of Object.keys(manifest.files)) {
        if (!seen.has(rel)) {
          delete manifest.files[rel];
          dirty = true;
        }
      }
    }
    if (
      dirty ||
      (existed && records.length === 0 && Object.keys(manifest.files).length === 0 && startDirty)
    ) {
      await mkdir(threadDir, { recursive: true });
      await writeAtomic(manifestFile, JSON.stringify(manifest));
    }
  } catch (error) {
    logger.warn('e2b output sync failed', { sandboxId: sandbox.id, error: errorMessage(error) });
    await rm(path.join(threadDir, `${OUTPUT_SYNC_MANIFEST}.tmp`), { force: true }).catch(
      () => undefined,
    );
  }
  return result;
}
