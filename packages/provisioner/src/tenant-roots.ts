import { posix } from 'node:path';

/**
 * Who owns which directory below the host base. The layout is the gateway's (`threadLayout` of
 * `@sbx/core`), on the node (hostPath) or on the user-data PVC (below its prefix):
 *
 * ```
 * skills_view/public/                                 shared public skills (skills root)
 * users/<user>/                                       a tenant (user) root
 * users/<user>/skills_view/<category>/                the user's skills views (skills root)
 * users/<user>/threads/<thread>/                      a tenant (thread) root
 * users/<user>/threads/<thread>/user-data/            the thread's user data (agent-writable)
 * users/<user>/threads/<thread>/skills_view/<cat>/    a policy run's skills views (skills root)
 * users/<user>/threads/<thread>/acp-workspace/
 * ```
 *
 * and, from the former layout, `THREADS_HOST_PATH` (`<thread>/user-data` of every user at once).
 */
export interface MountTenancy {
  /** The user and thread of the create request: their own roots are theirs to mount from. */
  readonly userId: string;
  readonly threadId: string;
  /**
   * The former user-data directory (`THREADS_HOST_PATH`) relative to the host base, when it lies
   * below it; it holds every tenant's data, so nothing may be mounted from it or above it.
   */
  readonly legacyThreadsDir?: string | undefined;
}

const USERS = 'users';
const THREADS = 'threads';
const SKILLS_VIEW = 'skills_view';
const USER_DATA = 'user-data';

/** `a` is `b` or an ancestor of it (both relative, normalised, by segments). */
function containsOrIs(a: string, b: string): boolean {
  return a === b || b.startsWith(`${a}/`);
}

/**
 * Why a host directory (relative to the host base, normalised, non-empty, not climbing out) may not
 * be mounted into the sandbox of `tenancy`'s (user, thread), or `undefined` when it may.
 *
 * Refused: a directory that contains a tenant root, a user-data root or a skills root (`users`,
 * `users/<u>`, `users/<u>/threads`, `users/<u>/threads/<t>`, `.../user-data`, `skills_view`,
 * `users/<u>/skills_view`, `.../threads/<t>/skills_view`), since mounting it hands the sandbox
 * every tenant, thread or category below; one inside another tenant's root (another user, or
 * another thread of the same user); one inside any user data (agents write there, symlinks
 * included, and the kubelet follows a symlink on a host path); and anything containing or inside
 * the former threads directory. What remains for a request is its own ACP workspace and skills
 * categories, its user's other directories (integration credentials) and directories outside
 * `users/` and `skills_view/`.
 */
export function tenantRootProblem(relative: string, tenancy: MountTenancy): string | undefined {
  const legacy = tenancy.legacyThreadsDir;
  if (legacy !== undefined && (containsOrIs(relative, legacy) || containsOrIs(legacy, relative))) {
    return 'is or overlaps the former user-data directory of every thread (THREADS_HOST_PATH)';
  }
  const s = relative.split('/');
  if (s.includes(USER_DATA)) return "is inside a thread's user data";
  if (relative === USERS) return 'contains every tenant';
  if (relative === SKILLS_VIEW) return 'contains the shared skills root';
  if (s[0] !== USERS) return undefined;
  // users/<u>/...
  if (s[1] !== tenancy.userId) return "is inside another user's directory";
  if (s.length === 2) return "contains the user's threads and skills roots";
  if (s[2] === SKILLS_VIEW && s.length === 3) return "contains the user's skills root";
  if (s[2] !== THREADS) return undefined;
  // users/<u>/threads/<t>/...
  if (s.length === 3) return 'contains every thread of the user';
  if (s[3] !== tenancy.threadId) return "is inside another thread's directory";
  if (s.length === 4) return "contains the thread's user data";
  if (s[4] === SKILLS_VIEW && s.length === 5) return "contains the thread's skills root";
  return undefined;
}

/** `THREADS_HOST_PATH` relative to the host base when it lies strictly below it, else undefined. */
export function legacyThreadsDirBelow(
  hostBase: string,
  threadsHostPath: string,
): string | undefined {
  if (hostBase === '' || threadsHostPath === '') return undefined;
  const relative = posix.relative(hostBase, posix.normalize(threadsHostPath));
  if (relative === '' || relative === '..' || relative.startsWith('../')) return undefined;
  return relative.replace(/\/+$/, '');
}
