import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { ToolSession, errorMessage, type Logger, type ToolSessionSnapshot } from '@sbx/core';

/**
 * `sbx tool` calls of one user's thread share what the agent tools know about the files read
 * (the read-before-write marks), as one agent run's calls do: `sbx tool read_file` and a later
 * `sbx tool str_replace` of the same file on the same thread work as they would in a run. The
 * marks are kept in the data directory (`sandbox.base_dir`, else `$SBX_HOME`, else `./.sbx`),
 * one file per user and thread under `cli/tool-sessions/`.
 *
 * The file is read back as untrusted input: bounded before it is read, opened without following a
 * link, every mark checked; a file that fails is logged and the call starts with no marks (which
 * can only refuse a write, never allow one).
 */

/** Largest session file read back; a larger one is refused unread. */
export const MAX_CLI_SESSION_BYTES = 1024 * 1024;
/** Marks a session keeps; the oldest recorded are dropped first. */
export const MAX_CLI_SESSION_MARKS = 1000;
const MAX_MARK_FIELD_CHARS = 4096;
/** A mark's fingerprint is opaque (`Sandbox.fileFingerprint`: a hash, or file identity and times). */
const MAX_FINGERPRINT_CHARS = 256;

/** The file of `userId`'s `threadId`: named by a hash, so no id ever becomes a path. */
export function cliToolSessionFile(baseDir: string, userId: string, threadId: string): string {
  const name = createHash('sha256')
    .update(JSON.stringify([userId, threadId]))
    .digest('hex');
  return path.join(baseDir, 'cli', 'tool-sessions', `${name}.json`);
}

function isMark(value: unknown): value is ToolSessionSnapshot['readMarks'][number] {
  if (typeof value !== 'object' || value === null) return false;
  const { sandboxId, path: markPath, hash } = value as Record<string, unknown>;
  return (
    typeof sandboxId === 'string' &&
    sandboxId.length > 0 &&
    sandboxId.length <= MAX_MARK_FIELD_CHARS &&
    typeof markPath === 'string' &&
    markPath.length > 0 &&
    markPath.length <= MAX_MARK_FIELD_CHARS &&
    typeof hash === 'string' &&
    hash.length > 0 &&
    hash.length <= MAX_FINGERPRINT_CHARS
  );
}

/** The snapshot in `text`, or why it is not one. */
function snapshotOf(text: string): ToolSessionSnapshot | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `not JSON (${errorMessage(err)})`;
  }
  const marks = (value as { readMarks?: unknown } | null)?.readMarks;
  if (!Array.isArray(marks)) return 'no readMarks list';
  if (marks.length > MAX_CLI_SESSION_MARKS) return `more than ${MAX_CLI_SESSION_MARKS} marks`;
  if (!marks.every(isMark)) return 'a mark that is not { sandboxId, path, hash } strings';
  return { readMarks: marks };
}

/** The thread's session as the last `sbx tool` call left it; a fresh one when there is none. */
export async function loadCliToolSession(file: string, logger: Logger): Promise<ToolSession> {
  let text: string;
  try {
    // Without blocking: a FIFO put there would otherwise hold the open forever.
    const handle = await open(
      file,
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
    try {
      if (!(await handle.stat()).isFile()) throw new Error('not a regular file');
      // Never more than the limit and one byte is read, whatever the file's size says.
      const buffer = Buffer.alloc(MAX_CLI_SESSION_BYTES + 1);
      let bytesRead = 0;
      for (;;) {
        const { bytesRead: got } = await handle.read(buffer, bytesRead, buffer.length - bytesRead);
        if (got === 0) break;
        bytesRead += got;
        if (bytesRead === buffer.length) break;
      }
      if (bytesRead > MAX_CLI_SESSION_BYTES) {
        throw new Error(`larger than ${MAX_CLI_SESSION_BYTES} bytes`);
      }
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return new ToolSession();
    logger.warn('the sbx tool session file cannot be read; starting without read marks', {
      file,
      error: errorMessage(err),
    });
    return new ToolSession();
  }
  const snapshot = snapshotOf(text);
  if (typeof snapshot === 'string') {
    logger.warn('the sbx tool session file is not a session; starting without read marks', {
      file,
      error: snapshot,
    });
    return new ToolSession();
  }
  return ToolSession.fromJSON(snapshot);
}

/**
 * Keeps `session` for the thread's next `sbx tool` call: written beside the file and renamed over
 * it, so a concurrent call reads the old or the new session whole (the later save wins; a mark it
 * lost can only make a later write ask for a read again). A failure is logged, not thrown: the
 * call's own result stands.
 */
export async function saveCliToolSession(
  file: string,
  session: ToolSession,
  logger: Logger,
): Promise<void> {
  const marks = session.toJSON().readMarks.slice(-MAX_CLI_SESSION_MARKS);
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    // `wx`: created here, never an existing file or link followed.
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(JSON.stringify({ readMarks: marks }));
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (err) {
    logger.warn('the sbx tool session could not be saved; the next call starts without it', {
      file,
      error: errorMessage(err),
    });
    await rm(temp, { force: true }).catch((cleanup: unknown) =>
      logger.warn('a temporary sbx tool session file could not be removed', {
        file: temp,
        error: errorMessage(cleanup),
      }),
    );
  }
}
