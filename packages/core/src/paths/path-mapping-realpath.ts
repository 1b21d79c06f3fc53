import { lstat, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import { SandboxPermissionError } from '../errors/errors.js';

/** Linux gives up after 40 link hops (`ELOOP`); use the same budget for dangling-link chains. */
const MAX_LINK_HOPS = 40;

function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

/**
 * Canonical form of `target` even when it does not exist yet: the deepest existing ancestor is
 * resolved with `realpath` and the missing tail is appended. A dangling symbolic link on the way is
 * followed by hand, because a write through it would create the file wherever the link points — so
 * its target, not the link's own location, is what a containment check must see.
 *
 * Symbolic-link loops (and chains longer than 40 hops) are refused: such a path cannot be shown to
 * stay inside any root.
 */
export async function realpathLenient(target: string, hops = 0): Promise<string> {
  const absolute = path.resolve(target);
  try {
    return await realpath(absolute);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ELOOP') throw loopError(err);
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
  }
  const parent = path.dirname(absolute);
  if (parent === absolute) return absolute;
  const realParent = await realpathLenient(parent, hops);
  const candidate = path.join(realParent, path.basename(absolute));
  let isLink = false;
  try {
    isLink = (await lstat(candidate)).isSymbolicLink();
  } catch (err) {
    const code = errnoCode(err);
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    return candidate;
  }
  if (!isLink) return candidate;
  if (hops >= MAX_LINK_HOPS) throw loopError();
  const linkTarget = await readlink(candidate);
  return realpathLenient(path.resolve(realParent, linkTarget), hops + 1);
}

/** Carries no path: callers re-raise it with the caller's virtual path so host paths never leak. */
function loopError(cause?: unknown): SandboxPermissionError {
  return new SandboxPermissionError(
    'Access denied: too many levels of symbolic links',
    { kind: 'EACCES' },
    cause === undefined ? {} : { cause },
  );
}

/** `true` when `candidate` equals `root` or lies below it (segment boundary, host separator). */
export function isInsideRoot(candidate: string, root: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}
