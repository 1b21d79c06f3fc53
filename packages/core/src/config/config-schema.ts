import path from 'node:path';
import { RESERVED_CONTAINER_PATHS } from '../paths/virtual-paths.js';

// The rules of a `sandbox:` section that need no schema library: defaults, reserved paths and the
// problem checks the schema (`config-section-schema.ts`) attaches to its fields.

export const DEFAULT_BASE_DIR = '.sbx';
export const DEFAULT_OWNERSHIP_KEY_PREFIX = 'sbx';

export const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const CONTAINER_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

function overlaps(a: string, b: string): boolean {
  const within = (p: string, prefix: string) => p === prefix || p.startsWith(`${prefix}/`);
  return within(a, b) || within(b, a);
}

/** Problem with a container path, or undefined. Canonical = absolute, normalised, no trailing `/`. */
export function containerPathProblem(p: string): string | undefined {
  if (!p.startsWith('/')) return 'must be an absolute container path (starting with "/")';
  if (p === '/') return 'must not be the container root "/"';
  const trimmed = p.replace(/\/+$/, '');
  if (path.posix.normalize(trimmed) !== trimmed) {
    return 'must be a canonical path (no "..", "." or repeated "/" segments)';
  }
  return undefined;
}

/**
 * Top-level host system trees. A host-backed provider maps virtual roots onto host directories, so
 * a virtual root here would put the host's own files one mapping mistake away from the agent.
 */
export const HOST_SYSTEM_TREES = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/home',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/opt',
  '/proc',
  '/root',
  '/run',
  '/sbin',
  '/srv',
  '/sys',
  '/tmp',
  '/usr',
  '/var',
] as const;

/** Trees that hold no data directory: a base directory or mount below them is refused too. */
const KERNEL_AND_CONFIG_TREES = ['/boot', '/dev', '/etc', '/proc', '/sys'] as const;

/** The largest timer Node accepts (2^31 - 1 ms); a longer one fires after 1 ms instead. */
export const MAX_TIMER_SECONDS = 2_147_483;

/** A number of seconds a timer is armed with: bounded by what Node's timers accept. */

export function skillsRootProblem(p: string): string | undefined {
  const base = containerPathProblem(p);
  if (base) return base;
  const root = p.replace(/\/+$/, '');
  const clash = RESERVED_CONTAINER_PATHS.find((r) => overlaps(root, r));
  if (clash) return `must not overlap the reserved platform path ${clash}`;
  // Kernel and configuration trees have no business as a skills root in any sandbox; the other
  // system trees (`/opt/skills` is common in images) are refused only by host-backed providers.
  const system = KERNEL_AND_CONFIG_TREES.find((t) => overlaps(root, t));
  return system ? `must not overlap the host system directory ${system}` : undefined;
}

/**
 * Why a host directory cannot hold sandbox data (`base_dir`, a mount's `host_path`), or undefined:
 * never the root, a system tree itself, or anything below a kernel or configuration tree. Relative
 * paths are checked once resolved (by the provider).
 */
export function hostDataDirProblem(p: string): string | undefined {
  if (!path.posix.isAbsolute(p)) return undefined;
  const resolved = path.posix.resolve(p).replace(/\/+$/, '') || '/';
  if (resolved === '/') return 'must not be the host root "/"';
  if ((HOST_SYSTEM_TREES as readonly string[]).includes(resolved)) {
    return `must not be the host system directory ${resolved}`;
  }
  const under = KERNEL_AND_CONFIG_TREES.find((t) => resolved.startsWith(`${t}/`));
  return under ? `must not be inside the host system directory ${under}` : undefined;
}

export function urlProblem(value: string, protocols: readonly string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `is not a valid URL`;
  }
  return protocols.includes(url.protocol)
    ? undefined
    : `must use ${protocols.map((p) => `${p}//`).join(' or ')} (got ${url.protocol}//)`;
}
