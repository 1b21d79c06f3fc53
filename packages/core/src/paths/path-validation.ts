import { stat } from 'node:fs/promises';
import { SandboxPermissionError, SandboxRuntimeError } from '../errors/errors.js';
import { PATH_TRAVERSAL_MESSAGE, type PathMapping } from './path-mapping.js';
import { isInsideRoot, realpathLenient } from './path-mapping-realpath.js';
import {
  DEFAULT_SKILLS_CONTAINER_PATH,
  VIRTUAL_ACP_WORKSPACE_PATH,
  VIRTUAL_PATH_PREFIX,
  hasTraversalSegment,
  isUnderVirtualPrefix,
  normalizeVirtualRoot,
  type ThreadDataPaths,
} from './virtual-paths.js';
import { replaceVirtualPath } from './virtual-paths-thread.js';

export const THREAD_DATA_UNAVAILABLE_MESSAGE = 'Thread data not available for local sandbox';
export const NO_ALLOWED_DIRECTORIES_MESSAGE = 'No allowed local sandbox directories configured';

/** The virtual roots a host-backed file tool may touch, besides `/mnt/user-data/...`. */
export interface VirtualRootsOptions {
  /** Default `/mnt/skills`. */
  skillsContainerPath?: string;
  /** Configured custom mounts whose host directories exist (see `existingMounts`). */
  customMounts?: readonly Pick<PathMapping, 'containerPath' | 'readOnly'>[];
}

export interface LocalToolPathOptions extends VirtualRootsOptions {
  /** The tool only reads. Default false (the tool writes). */
  readOnly?: boolean;
}

export function isSkillsPath(p: string, options: VirtualRootsOptions = {}): boolean {
  return isUnderVirtualPrefix(p, options.skillsContainerPath ?? DEFAULT_SKILLS_CONTAINER_PATH);
}

export function isAcpWorkspacePath(p: string): boolean {
  return isUnderVirtualPrefix(p, VIRTUAL_ACP_WORKSPACE_PATH);
}

/** The configured mount covering `p`, longest container path first. */
export function customMountFor<M extends Pick<PathMapping, 'containerPath'>>(
  p: string,
  mounts: readonly M[] | undefined,
): M | undefined {
  let best: M | undefined;
  for (const mount of mounts ?? []) {
    if (!isUnderVirtualPrefix(p, mount.containerPath)) continue;
    const length = normalizeVirtualRoot(mount.containerPath).length;
    if (!best || length > normalizeVirtualRoot(best.containerPath).length) {
      best = mount;
    }
  }
  return best;
}

/** Refuses any `..` segment (either separator) with the traversal message. */
export function rejectPathTraversal(p: string): void {
  if (hasTraversalSegment(p)) {
    throw new SandboxPermissionError(PATH_TRAVERSAL_MESSAGE, { path: p });
  }
}

/** `/mnt/user-data` or `/mnt/user-data/`: the parent of the thread's three data directories. */
export function isUserDataRoot(p: string): boolean {
  return p === VIRTUAL_PATH_PREFIX || p === `${VIRTUAL_PATH_PREFIX}/`;
}

/**
 * Tool-layer gate for a file tool on a host-backed sandbox. Checks, in order: thread data present;
 * no `..`; the bare `/mnt/user-data` only for reading (listing and searching the three data
 * directories); skills and ACP paths only for reading; `/mnt/user-data/...`; configured mounts (writes refused on read-only ones); nothing else. Skills, ACP and
 * mount paths stay virtual for the sandbox's own mount table; user-data paths are then confined by
 * `resolveAndValidateUserDataPath`.
 */
export function validateLocalToolPath(
  p: string,
  threadData: ThreadDataPaths | null | undefined,
  options: LocalToolPathOptions = {},
): void {
  if (!threadData) throw new SandboxRuntimeError(THREAD_DATA_UNAVAILABLE_MESSAGE);
  rejectPathTraversal(p);
  const readOnly = options.readOnly ?? false;
  if (isUserDataRoot(p)) {
    // Listing or searching the root shows the thread's workspace, uploads and outputs; nothing is
    // stored in the root itself, so it is never a write target.
    if (readOnly) return;
    throw new SandboxPermissionError(
      `${VIRTUAL_PATH_PREFIX} itself is not writable; write below ${VIRTUAL_PATH_PREFIX}/workspace/, uploads/ or outputs/`,
      { path: p, kind: 'EROFS' },
    );
  }
  if (isSkillsPath(p, options)) {
    if (readOnly) return;
    throw new SandboxPermissionError(`Write access to skills path is not allowed: ${p}`, {
      path: p,
      kind: 'EROFS',
    });
  }
  if (isAcpWorkspacePath(p)) {
    if (readOnly) return;
    throw new SandboxPermissionError(`Write access to ACP workspace is not allowed: ${p}`, {
      path: p,
      kind: 'EROFS',
    });
  }
  if (p.startsWith(`${VIRTUAL_PATH_PREFIX}/`)) return;
  const mount = customMountFor(p, options.customMounts);
  if (mount) {
    if (!readOnly && mount.readOnly) {
      throw new SandboxPermissionError(`Write access to read-only mount is not allowed: ${p}`, {
        path: p,
        kind: 'EROFS',
      });
    }
    return;
  }
  const skills = normalizeVirtualRoot(options.skillsContainerPath ?? DEFAULT_SKILLS_CONTAINER_PATH);
  throw new SandboxPermissionError(
    `Only paths under ${VIRTUAL_PATH_PREFIX}/, ${skills}/, ${VIRTUAL_ACP_WORKSPACE_PATH}/, or configured mount paths are allowed`,
    { path: p },
  );
}

/**
 * Host path of a `/mnt/user-data/...` path, canonical and confined to the thread's workspace,
 * uploads or outputs directory (symbolic links followed); anything else is a traversal.
 */
export async function resolveAndValidateUserDataPath(
  p: string,
  threadData: ThreadDataPaths,
): Promise<string> {
  const roots = [threadData.workspacePath, threadData.uploadsPath, threadData.outputsPath].filter(
    (r): r is string => typeof r === 'string' && r.length > 0,
  );
  if (roots.length === 0) throw new SandboxRuntimeError(NO_ALLOWED_DIRECTORIES_MESSAGE);
  rejectPathTraversal(p);
  const resolved = await realpathLenient(replaceVirtualPath(p, threadData));
  const resolvedRoots = await Promise.all(roots.map((r) => realpathLenient(r)));
  if (!resolvedRoots.some((root) => isInsideRoot(resolved, root))) {
    throw new SandboxPermissionError(PATH_TRAVERSAL_MESSAGE, { path: p });
  }
  return resolved;
}

/** The mounts whose host directory exists; configured mounts that do not are ignored. */
export async function existingMounts<M extends Pick<PathMapping, 'hostPath'>>(
  mounts: readonly M[],
): Promise<M[]> {
  const present = await Promise.all(
    mounts.map(async (m) => {
      try {
        await stat(m.hostPath);
        return true;
      } catch {
        // Missing (or unreadable) host paths are exactly what this filter drops.
        return false;
      }
    }),
  );
  return mounts.filter((_, i) => present[i]);
}
