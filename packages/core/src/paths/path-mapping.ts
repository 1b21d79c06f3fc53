import path from 'node:path';
import { SandboxPermissionError } from '../errors/errors.js';
import { assertPathArgument, shownPath } from './path-limits.js';
import { isInsideRoot, realpathLenient } from './path-mapping-realpath.js';
import { hasTraversalSegment, normalizeVirtualRoot } from './virtual-paths.js';

/** One mount: a virtual (container) directory backed by a host directory. */
export interface PathMapping {
  /** Absolute virtual path, no trailing `/` (except the root `/` itself). */
  readonly containerPath: string;
  /** Host directory behind it. */
  readonly hostPath: string;
  readonly readOnly: boolean;
}

export function pathMapping(
  containerPath: string,
  hostPath: string,
  readOnly = false,
): PathMapping {
  return Object.freeze({ containerPath: normalizeVirtualRoot(containerPath), hostPath, readOnly });
}

/** Result of forward resolution. `mapping` is undefined for a path no mapping covers. */
export interface ResolvedPath {
  /** Canonical host path (symbolic links followed), checked against the mount. */
  readonly hostPath: string;
  /**
   * The mount's canonical root joined with the remainder, links not followed: names the same file
   * as `hostPath` but keeps link semantics (`rm link` removes the link, not its target).
   */
  readonly lexicalHostPath: string;
  readonly mapping: PathMapping | undefined;
  /** Canonical root of `mapping`: what an opened file must still lie in (`openConfined`). */
  readonly root?: string;
}

export type PathAccess = 'read' | 'write';

export const PATH_TRAVERSAL_MESSAGE = 'Access denied: path traversal detected';
export const PATH_ESCAPES_MOUNT_MESSAGE = 'Access denied: path escapes mounted directory';
export const READ_ONLY_FILE_SYSTEM_MESSAGE = 'Read-only file system';
export const OUTSIDE_MOUNTS_MESSAGE = 'Access denied: path is outside the sandbox mounts';

export interface PathMappingTableOptions {
  /**
   * Refuse (`EACCES`) a path no mount covers instead of passing it through as a host path.
   * Default false. A confined table is what makes a host-backed sandbox a boundary for its file
   * operations: only what a mount maps is reachable, so a configuration that points a virtual
   * root at a host system directory (`skills.container_path: /etc`) exposes nothing below it but
   * the mounted categories.
   */
  confined?: boolean;
  /**
   * Every mapping's host directory is given canonical (the provider resolved it) and must still
   * be: a mount root that resolves elsewhere now (the thread's workspace replaced by a link to
   * `/`) is refused instead of followed. Default: the value of `confined`.
   */
  strictRoots?: boolean;
}

export const MOUNT_ROOT_MOVED_MESSAGE =
  'Access denied: the directory behind this path was replaced by a symbolic link';

/**
 * The mount table of one sandbox: container → host resolution with the containment and read-only
 * rules every file operation and every translated command path goes through.
 *
 * - The most specific container path wins (`/mnt/user-data/workspace` before `/mnt/user-data`).
 * - A `..` segment is refused outright, before any I/O: a virtual path never needs one, and
 *   rejecting it closes every lexical escape without having to reason about it.
 * - The host result is canonical (symbolic links followed, see `realpathLenient`) and must stay
 *   inside the matched mount's canonical root; otherwise `EACCES`.
 * - A write is refused with `EROFS` when the matched mount is read-only, or when the canonical
 *   target lands inside a read-only mount (the deepest canonical root containing it decides), so
 *   a symbolic link cannot turn a read-only mount writable and vice versa.
 * - A path no mount covers is refused in a `confined` table; otherwise it passes through
 *   unchanged (callers that must confine paths validate them first, see
 *   `validateLocalToolPath`).
 *
 * Canonical roots are resolved once per table, since mount roots do not move.
 */
export class PathMappingTable {
  readonly mappings: readonly PathMapping[];
  private readonly byContainer: readonly PathMapping[];
  private rootsPromise: Promise<ReadonlyMap<PathMapping, string>> | undefined;
  readonly confined: boolean;
  private readonly strictRoots: boolean;
  /** Mappings whose root no longer resolves to its canonical host directory (`strictRoots`). */
  private readonly movedRoots = new Set<PathMapping>();

  constructor(mappings: readonly PathMapping[], options: PathMappingTableOptions = {}) {
    this.confined = options.confined ?? false;
    this.strictRoots = options.strictRoots ?? this.confined;
    this.mappings = mappings.map((m) => pathMapping(m.containerPath, m.hostPath, m.readOnly));
    this.byContainer = [...this.mappings].sort(
      (a, b) => b.containerPath.length - a.containerPath.length,
    );
  }

  /** Mappings, most specific container path first. */
  get mappingsBySpecificity(): readonly PathMapping[] {
    return this.byContainer;
  }

  /** The mapping covering `containerPath` and the remainder below it (no leading `/`). */
  match(containerPath: string): { mapping: PathMapping; remainder: string } | undefined {
    for (const mapping of this.byContainer) {
      const root = mapping.containerPath;
      if (root === '/') {
        if (containerPath.startsWith('/')) {
          return { mapping, remainder: stripLeadingSlashes(containerPath) };
        }
        continue;
      }
      if (containerPath === root || containerPath.startsWith(`${root}/`)) {
        return { mapping, remainder: stripLeadingSlashes(containerPath.slice(root.length)) };
      }
    }
    return undefined;
  }

  /** Canonical host root of every mapping, resolved once. */
  resolvedRoots(): Promise<ReadonlyMap<PathMapping, string>> {
    if (!this.rootsPromise) {
      const pending = Promise.all(
        this.mappings.map(async (m) => {
          const canonical = await realpathLenient(m.hostPath);
          if (this.strictRoots && canonical !== path.resolve(m.hostPath)) this.movedRoots.add(m);
          return [m, canonical] as const;
        }),
      ).then((pairs) => new Map(pairs));
      // A failed resolution (e.g. a permission error on a parent) must not poison the table.
      pending.catch(() => {
        if (this.rootsPromise === pending) this.rootsPromise = undefined;
      });
      this.rootsPromise = pending;
    }
    return this.rootsPromise;
  }

  async resolve(containerPath: string, access: PathAccess = 'read'): Promise<ResolvedPath> {
    assertPathArgument(containerPath);
    const found = this.match(containerPath);
    if (!found) {
      if (this.confined)
        throw new SandboxPermissionError(OUTSIDE_MOUNTS_MESSAGE, {
          path: shownPath(containerPath),
        });
      return { hostPath: containerPath, lexicalHostPath: containerPath, mapping: undefined };
    }
    const { mapping, remainder } = found;
    if (hasTraversalSegment(remainder)) {
      throw new SandboxPermissionError(PATH_TRAVERSAL_MESSAGE, { path: shownPath(containerPath) });
    }
    const roots = await this.resolvedRoots();
    if (this.movedRoots.has(mapping)) {
      throw new SandboxPermissionError(MOUNT_ROOT_MOVED_MESSAGE, {
        path: shownPath(containerPath),
      });
    }
    const root = roots.get(mapping) as string;
    const lexicalHostPath = remainder ? path.join(root, remainder) : root;
    let hostPath: string;
    try {
      hostPath = remainder ? await realpathLenient(lexicalHostPath) : root;
    } catch (err) {
      if (err instanceof SandboxPermissionError) {
        throw new SandboxPermissionError(
          err.baseMessage,
          { path: shownPath(containerPath), kind: err.kind as 'EACCES' },
          { cause: err },
        );
      }
      throw err;
    }
    if (!isInsideRoot(hostPath, root)) {
      throw new SandboxPermissionError(PATH_ESCAPES_MOUNT_MESSAGE, {
        path: shownPath(containerPath),
      });
    }
    if (access === 'write' && (mapping.readOnly || ownerOf(hostPath, roots)?.readOnly)) {
      throw new SandboxPermissionError(READ_ONLY_FILE_SYSTEM_MESSAGE, {
        path: shownPath(containerPath),
        kind: 'EROFS',
      });
    }
    return { hostPath, lexicalHostPath, mapping, root };
  }

  /**
   * Refuses a write whose opened file really lies in a read-only mount (the deepest canonical root
   * containing it decides): the post-open half of the rule `resolve` applies to the path.
   */
  async assertWritableAt(realPath: string, shown: string): Promise<void> {
    const roots = await this.resolvedRoots();
    if (ownerOf(realPath, roots)?.readOnly) {
      throw new SandboxPermissionError(READ_ONLY_FILE_SYSTEM_MESSAGE, {
        path: shownPath(shown),
        kind: 'EROFS',
      });
    }
  }

  /**
   * Container path of a canonical host path (deepest canonical root first), or the host path
   * unchanged when no mount contains it. Lexical: callers pass paths that are already canonical,
   * such as the results of a walk below a resolved root.
   */
  async toContainerPath(hostPath: string): Promise<string> {
    const roots = await this.resolvedRoots();
    return reverseLexically(hostPath, roots);
  }

  /** Bulk form of `toContainerPath` with one root lookup. */
  async toContainerPaths(hostPaths: readonly string[]): Promise<string[]> {
    const roots = await this.resolvedRoots();
    return hostPaths.map((p) => reverseLexically(p, roots));
  }
}

function stripLeadingSlashes(value: string): string {
  let i = 0;
  while (i < value.length && value.charCodeAt(i) === 0x2f) i++;
  return value.slice(i);
}

function ownerOf(
  hostPath: string,
  roots: ReadonlyMap<PathMapping, string>,
): PathMapping | undefined {
  let best: PathMapping | undefined;
  let bestLength = -1;
  for (const [mapping, root] of roots) {
    if (root.length > bestLength && isInsideRoot(hostPath, root)) {
      best = mapping;
      bestLength = root.length;
    }
  }
  return best;
}

function reverseLexically(hostPath: string, roots: ReadonlyMap<PathMapping, string>): string {
  const owner = ownerOf(hostPath, roots);
  if (!owner) return hostPath;
  const root = roots.get(owner) as string;
  let start = root.length;
  while (hostPath.charCodeAt(start) === 0x2f) start++;
  // POSIX paths below a canonical root need no re-joining; other separators do.
  const tail = hostPath.slice(start);
  const rel =
    path.sep === '/' && !tail.includes('//') && !tail.endsWith('/')
      ? tail
      : tail.split(path.sep).filter(Boolean).join('/');
  if (!rel) return owner.containerPath;
  return owner.containerPath === '/' ? `/${rel}` : `${owner.containerPath}/${rel}`;
}
