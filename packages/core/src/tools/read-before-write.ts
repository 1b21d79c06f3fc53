import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { SandboxAuthorizationError, isSbxError } from '../errors/errors.js';
import { silentLogger } from '../logging/logger.js';
import type { Sandbox } from '../contract/sandbox.js';
import type { ToolContext } from './tool-context.js';
import { ToolSession } from './tool-session.js';

/**
 * Read-before-write: an agent may overwrite, append to or edit an existing file only if the file's
 * current content is exactly what it last read (or last wrote) in this session. This stops an agent
 * from clobbering a file it never looked at, or one that changed under it (a user upload, a bash
 * command, a parallel tool call) since it looked.
 *
 * Divergence from the reference, on purpose: a successful write re-records the file's hash, so an
 * agent can make several consecutive edits without re-reading in between. The reference invalidates
 * on every write; ours still refuses any change the agent did not make itself through these tools.
 */

export function sha256Hex(content: string): string {
  return createHash('sha256').update(content, 'utf8').digest('hex');
}

/**
 * The key a mark and the file lock use for a virtual path: lexical POSIX normalization, so
 * `/mnt/user-data/outputs/../outputs/report.md` and `/mnt/user-data/outputs/report.md` are one file.
 */
export function normalizeToolPath(path: string): string {
  const normalized = posix.normalize(path.replace(/\\/g, '/'));
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
}

/**
 * The session holding the context's read marks. A context without one gets a fresh session attached
 * to it, so marks then live exactly as long as that context object.
 */
export function toolSessionOf(context: ToolContext): ToolSession {
  context.session ??= new ToolSession();
  return context.session;
}

export function readBeforeWriteBlockedMessage(toolName: string, path: string): string {
  return (
    `Error: ${toolName} refused: ${path} already exists and you have not read its current version ` +
    `(it was never read in this session, or it changed after your last read). ` +
    `Read it with read_file, then retry.`
  );
}

function isNotFound(err: unknown): boolean {
  if (!isSbxError(err)) return false;
  const kind = (err as { kind?: unknown }).kind;
  return kind === 'ENOENT' || kind === 'ENOTDIR';
}

export interface ReadBeforeWriteCheck {
  context: ToolContext;
  sandbox: Sandbox;
  /** The path as the tool passes it to the sandbox. */
  path: string;
  toolName: string;
}

/**
 * Returns the refusal text when the write must not proceed, `undefined` when it may. Callers hold
 * the file lock of `(sandbox.id, path)` across this check and the write, so the verdict cannot go
 * stale between the two.
 *
 * A missing file passes (creation, or the tool reports its own error). A file that cannot be
 * inspected for another reason passes too: the gate protects against blind overwrites, it is not
 * an access control, and the write itself will surface a real problem. An authorization denial is
 * never such a reason; it always propagates.
 */
export async function checkReadBeforeWrite(
  check: ReadBeforeWriteCheck,
): Promise<string | undefined> {
  const { context, sandbox, path, toolName } = check;
  let current: string;
  try {
    current = await sandbox.fileFingerprint(path);
  } catch (err) {
    if (err instanceof SandboxAuthorizationError) throw err;
    if (isNotFound(err)) return undefined;
    (context.logger ?? silentLogger).warn(
      'Read-before-write check could not inspect the file; allowing the write',
      {
        tool: toolName,
        sandboxId: sandbox.id,
        path,
        error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      },
    );
    return undefined;
  }
  const mark = toolSessionOf(context).readMark(sandbox.id, normalizeToolPath(path));
  if (mark !== undefined && mark === current) return undefined;
  return readBeforeWriteBlockedMessage(toolName, path);
}

/**
 * Records what the agent has now seen (a read) or produced (a write) of a file: its fingerprint
 * (`Sandbox.fileFingerprint`), computed from `content` where the sandbox fingerprints by content.
 */
export async function recordFileContent(
  context: ToolContext,
  sandbox: Sandbox,
  path: string,
  content: string,
): Promise<void> {
  let fingerprint: string;
  try {
    fingerprint = await sandbox.fileFingerprint(path, content);
  } catch (err) {
    if (err instanceof SandboxAuthorizationError) throw err;
    // No mark rather than a stale one: the next write asks for a fresh read.
    toolSessionOf(context).forget(sandbox.id, normalizeToolPath(path));
    (context.logger ?? silentLogger).debug('Could not fingerprint a file just read', {
      sandboxId: sandbox.id,
      path,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
    return;
  }
  toolSessionOf(context).recordRead(sandbox.id, normalizeToolPath(path), fingerprint);
}

/**
 * Re-reads the full file and records its hash. Used after a ranged read (the mark covers the whole
 * file, not the range) and after a write (so the agent's own edit does not lock it out). If the
 * re-read fails, the old mark is dropped: a stale mark must never vouch for content nobody read.
 */
export async function refreshFileMark(
  context: ToolContext,
  sandbox: Sandbox,
  path: string,
): Promise<void> {
  try {
    const fingerprint = await sandbox.fileFingerprint(path);
    toolSessionOf(context).recordRead(sandbox.id, normalizeToolPath(path), fingerprint);
  } catch (err) {
    if (err instanceof SandboxAuthorizationError) throw err;
    toolSessionOf(context).forget(sandbox.id, normalizeToolPath(path));
    (context.logger ?? silentLogger).debug('Could not re-read a file to record its hash', {
      sandboxId: sandbox.id,
      path,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
  }
}
