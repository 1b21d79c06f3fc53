import { createReadStream } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { shellQuote, silentLogger } from '@sbx/core';
import type { Clock, Logger } from '@sbx/core';
import type { E2BRemoteSandbox } from './e2b-client.js';
import { commandExitResult, errorMessage } from './e2b-errors.js';

export const MAX_MOUNT_FILE_SIZE = 100 * 1024 * 1024;
export const MAX_MOUNT_FILES = 2000;
export const MAX_MOUNT_TOTAL_SIZE = 512 * 1024 * 1024;
export const MAX_MOUNT_PASS_FILES = 2000;
export const MAX_MOUNT_PASS_TOTAL_BYTES = 512 * 1024 * 1024;
export const MOUNT_PASS_DEADLINE_SECONDS = 120;

export interface UploadLimits {
  maxFileSize: number;
  maxFiles: number;
  maxTotalSize: number;
  passFiles: number;
  passBytes: number;
  passDeadlineMs: number;
}

export const DEFAULT_UPLOAD_LIMITS: UploadLimits = {
  maxFileSize: MAX_MOUNT_FILE_SIZE,
  maxFiles: MAX_MOUNT_FILES,
  maxTotalSize: MAX_MOUNT_TOTAL_SIZE,
  passFiles: MAX_MOUNT_PASS_FILES,
  passBytes: MAX_MOUNT_PASS_TOTAL_BYTES,
  passDeadlineMs: MOUNT_PASS_DEADLINE_SECONDS * 1000,
};

/** Raised (strict mode) or logged when a tree cannot be uploaded as a whole. */
export class UploadRejectedError extends Error {
  override name = 'UploadRejectedError';
}

/**
 * One upload pass (the one-shot upload of a new VM, or one skill sync): shared file, byte and time
 * budgets across every tree it uploads. Attempts are counted before the write, so a failed write
 * still spends budget and a VM that keeps failing cannot make the pass run unbounded.
 */
export class UploadPass {
  attemptedFiles = 0;
  attemptedBytes = 0;
  completedFiles = 0;
  completedBytes = 0;
  /** Why the pass stopped, once it did. */
  stopped: string | undefined;
  readonly limits: UploadLimits;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #startedAt: number;
  readonly #logger: Logger;

  constructor(
    clock: Pick<Clock, 'now'>,
    limits: Partial<UploadLimits> = {},
    logger: Logger = silentLogger,
  ) {
    this.#clock = clock;
    this.#startedAt = clock.now();
    this.limits = { ...DEFAULT_UPLOAD_LIMITS, ...limits };
    this.#logger = logger;
  }

  get elapsedMs(): number {
    return this.#clock.now() - this.#startedAt;
  }

  /**
   * Whether the pass may go on; stops it (logging once, with the reason) when the deadline passed
   * or, given the size of the next file, when the file or byte budget would be exceeded.
   */
  check(nextBytes?: number): boolean {
    if (this.stopped) return false;
    let reason: string | undefined;
    if (this.elapsedMs >= this.limits.passDeadlineMs) {
      reason = `time budget ${this.limits.passDeadlineMs / 1000}s`;
    } else if (nextBytes !== undefined && this.attemptedFiles + 1 > this.limits.passFiles) {
      reason = `file count cap ${this.limits.passFiles}`;
    } else if (nextBytes !== undefined && this.attemptedBytes + nextBytes > this.limits.passBytes) {
      reason = `total byte budget ${this.limits.passBytes}`;
    }
    if (reason === undefined) return true;
    this.stopped = reason;
    this.#logger.warn(`e2b upload pass stopped: reason=${reason}`, {
      reason,
      attempted_files: this.attemptedFiles,
      attempted_bytes: this.attemptedBytes,
      completed_files: this.completedFiles,
      completed_bytes: this.completedBytes,
      elapsed_ms: this.elapsedMs,
    });
    return false;
  }

  /** Deadline-only check (between mounts, during directory walks). */
  inTime(): boolean {
    return this.check();
  }
}

interface PlannedFile {
  host: string;
  rel: string;
  size: number;
}

export interface UploadTreeOptions {
  readOnly?: boolean;
  /** Errors propagate instead of being logged (skill sync). */
  strict?: boolean;
  logger?: Logger;
}

async function walk(
  root: string,
  pass: UploadPass,
  limits: UploadLimits,
): Promise<PlannedFile[] | string> {
  const files: PlannedFile[] = [];
  let total = 0;
  const rootStat = await lstat(root);
  if (rootStat.isFile()) {
    return rootStat.size > limits.maxFileSize
      ? `${root} exceeds the ${limits.maxFileSize}-byte file limit`
      : [{ host: root, rel: '', size: rootStat.size }];
  }
  const stack: string[] = [''];
  while (stack.length > 0) {
    const rel = stack.pop() as string;
    const dir = path.join(root, rel);
    for (const name of (await readdir(dir)).sort()) {
      if (!pass.inTime()) return 'deadline';
      const childRel = rel ? `${rel}/${name}` : name;
      const s = await lstat(path.join(dir, name));
      // Symlinks are never followed: a link could point anywhere on the gateway host.
      if (s.isSymbolicLink()) continue;
      if (s.isDirectory()) stack.push(childRel);
      else if (s.isFile()) {
        if (s.size > limits.maxFileSize) {
          return `${path.join(dir, name)} exceeds the ${limits.maxFileSize}-byte file limit`;
        }
        files.push({ host: path.join(dir, name), rel: childRel, size: s.size });
        total += s.size;
        if (files.length > limits.maxFiles)
          return `${root} exceeds the ${limits.maxFiles}-file limit`;
        if (total > limits.maxTotalSize) {
          return `${root} exceeds the ${limits.maxTotalSize}-byte total limit`;
        }
      }
    }
  }
  return files;
}

async function runQuiet(remote: E2BRemoteSandbox, cmd: string): Promise<void> {
  try {
    await remote.commands.run(cmd, { timeoutMs: 60_000 });
  } catch (error) {
    if (commandExitResult(error) === undefined) throw error;
  }
}

/**
 * Uploads the file or tree `source` (gateway host) to `dest` (VM). The whole tree is checked
 * against the per-tree limits before the first write, so a tree that is too big is rejected
 * without leaving half of it behind. Files are streamed from an open handle whose size must still
 * match the preflight. A read-only tree is write-protected afterwards if anything was attempted.
 */
export async function uploadTree(
  remote: E2BRemoteSandbox,
  source: string,
  dest: string,
  pass: UploadPass,
  options: UploadTreeOptions = {},
): Promise<{ files: number; bytes: number }> {
  const logger = options.logger ?? silentLogger;
  const fail = (message: string): { files: number; bytes: number } => {
    if (options.strict) throw new UploadRejectedError(message);
    logger.warn(`Skipping e2b upload of ${source}: ${message}`, { source, destination: dest });
    return { files: 0, bytes: 0 };
  };
  if (!pass.inTime()) return { files: 0, bytes: 0 };
  const plan = await walk(source, pass, pass.limits);
  if (plan === 'deadline') return { files: 0, bytes: 0 };
  if (typeof plan === 'string') return fail(plan);
  const single = plan.length === 1 && plan[0]?.rel === '';
  const dirs = new Set<string>(single ? [path.posix.dirname(dest)] : [dest]);
  for (const f of plan) if (!single) dirs.add(path.posix.dirname(path.posix.join(dest, f.rel)));
  for (const d of [...dirs].sort()) {
    try {
      await remote.files.makeDir(d);
    } catch (error) {
      if (options.strict) throw error;
    }
  }
  const started = pass.elapsedMs;
  let files = 0;
  let bytes = 0;
  let attempted = 0;
  try {
    for (const f of plan) {
      if (!pass.check(f.size)) break;
      pass.attemptedFiles += 1;
      pass.attemptedBytes += f.size;
      attempted += 1;
      const target = single ? dest : path.posix.join(dest, f.rel);
      const handle = await open(f.host, 'r');
      try {
        const now = await handle.stat();
        if (now.size !== f.size) {
          return fail(`${f.host} changed during upload preflight`);
        }
        const stream = Readable.toWeb(
          createReadStream('', {
            fd: handle.fd,
            autoClose: false,
            start: 0,
            end: Math.max(0, f.size - 1),
          }),
        ) as NodeReadableStream<Uint8Array> as unknown as ReadableStream<Uint8Array>;
        try {
          await remote.files.write(target, f.size === 0 ? '' : stream);
        } catch (error) {
          if (options.strict) throw error;
          logger.warn(`e2b upload of ${f.host} failed`, { error: errorMessage(error) });
          continue;
        }
      } finally {
        await handle.close();
      }
      pass.completedFiles += 1;
      pass.completedBytes += f.size;
      files += 1;
      bytes += f.size;
    }
  } finally {
    if (options.readOnly && attempted > 0) {
      const cmd = single ? `chmod a-w ${shellQuote(dest)}` : `chmod -R a-w ${shellQuote(dest)}`;
      await runQuiet(remote, cmd).catch((error: unknown) =>
        logger.warn('Failed to write-protect an e2b upload', {
          destination: dest,
          error: errorMessage(error),
        }),
      );
    }
  }
  logger.info('Uploaded tree into e2b sandbox', {
    source,
    destination: dest,
    files,
    bytes,
    elapsed_ms: pass.elapsedMs - started,
  });
  return { files, bytes };
}
