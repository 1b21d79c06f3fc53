import path from 'node:path';
import {
  VIRTUAL_OUTPUTS_PATH,
  VIRTUAL_PATH_PREFIX,
  VIRTUAL_UPLOADS_PATH,
  VIRTUAL_WORKSPACE_PATH,
  type ThreadDataPaths,
} from './virtual-paths.js';

/**
 * Virtual ↔ host correspondences of a thread's user data, for the tool layer of a host-backed
 * sandbox. Host paths may be POSIX or Windows spelled; each keeps its own separator style.
 */
export interface ThreadPathCorrespondence {
  readonly virtualPath: string;
  readonly hostPath: string;
}

/** `\` is the separator of a host path that has backslashes and no forward slashes. */
function separatorOf(hostPath: string): '/' | '\\' {
  return hostPath.includes('\\') && !hostPath.includes('/') ? '\\' : '/';
}

function parentOf(hostPath: string): string {
  return separatorOf(hostPath) === '\\'
    ? path.win32.dirname(hostPath)
    : path.posix.dirname(hostPath);
}

/**
 * `/mnt/user-data/{workspace,uploads,outputs}` for each directory present, plus `/mnt/user-data`
 * itself when every present directory shares one parent (the thread's user-data directory).
 */
export function threadVirtualToHostMappings(td: ThreadDataPaths): ThreadPathCorrespondence[] {
  const out: ThreadPathCorrespondence[] = [];
  const pairs: Array<[string, string | undefined]> = [
    [VIRTUAL_WORKSPACE_PATH, td.workspacePath],
    [VIRTUAL_UPLOADS_PATH, td.uploadsPath],
    [VIRTUAL_OUTPUTS_PATH, td.outputsPath],
  ];
  for (const [virtualPath, hostPath] of pairs) {
    if (hostPath) out.push({ virtualPath, hostPath });
  }
  const parents = new Set(out.map((m) => parentOf(m.hostPath)));
  const [onlyParent] = parents;
  if (parents.size === 1 && onlyParent !== undefined) {
    out.push({ virtualPath: VIRTUAL_PATH_PREFIX, hostPath: onlyParent });
  }
  return out;
}

/** The same correspondences, deepest host path first (the order masking needs). */
export function threadHostToVirtualMappings(td: ThreadDataPaths): ThreadPathCorrespondence[] {
  return threadVirtualToHostMappings(td).sort((a, b) => b.hostPath.length - a.hostPath.length);
}

function joinPreservingStyle(base: string, relative: string): string {
  if (!relative) return base;
  const sep = separatorOf(base);
  const rel = relative.replace(sep === '/' ? /\\/g : /\//g, sep).replace(/^[/\\]+/, '');
  return `${base.replace(/[/\\]+$/, '')}${sep}${rel}`;
}

/**
 * Host path of a `/mnt/user-data/...` path for this thread (longest virtual prefix first; segment
 * boundaries respected; a trailing `/` survives in the host path's separator style). Anything else,
 * or no thread data, comes back unchanged. Lexical only: confinement is checked by
 * `resolveAndValidateUserDataPath`.
 */
export function replaceVirtualPath(
  virtualPath: string,
  td: ThreadDataPaths | null | undefined,
): string {
  if (!td) return virtualPath;
  const mappings = threadVirtualToHostMappings(td).sort(
    (a, b) => b.virtualPath.length - a.virtualPath.length,
  );
  for (const { virtualPath: root, hostPath } of mappings) {
    if (virtualPath === root) return hostPath;
    if (virtualPath.startsWith(`${root}/`)) {
      const rest = virtualPath.slice(root.length).replace(/^\/+/, '');
      let result = joinPreservingStyle(hostPath, rest);
      if (virtualPath.endsWith('/') && !/[/\\]$/.test(result)) result += separatorOf(hostPath);
      return result;
    }
  }
  return virtualPath;
}

// The root is process-wide constant, so this is the single compiled pattern for it. The boundary
// is text-oriented: `/mnt/user-data:` (PATH lists) and `/mnt/user-data,` are roots, while
// `/mnt/user-data-backup`, `/mnt/user-data2`, `.bak`, `_old` are siblings.
const USER_DATA_IN_COMMAND = /\/mnt\/user-data(?=\/|$|[^\p{L}\p{N}_./-])(\/[^\s"';&|<>()]*)?/gu;

/**
 * Rewrites only `/mnt/user-data` paths of a command to this thread's host directories (forward
 * slashes, even for Windows hosts). Skills, ACP and custom-mount paths stay virtual for the
 * sandbox's own mount table, whose user comes from acquire time.
 */
export function replaceVirtualPathsInCommand(
  command: string,
  td: ThreadDataPaths | null | undefined,
): string {
  if (!td || !command.includes(VIRTUAL_PATH_PREFIX)) return command;
  return command.replace(USER_DATA_IN_COMMAND, (m) =>
    replaceVirtualPath(m, td).replace(/\\/g, '/'),
  );
}
