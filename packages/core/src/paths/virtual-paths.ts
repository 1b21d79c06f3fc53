/**
 * The virtual path layout every sandbox shows to an agent. Whatever the provider (host directories,
 * container bind mounts, an uploaded VM tree), the agent addresses files through these prefixes, so
 * prompts, tool descriptions and stored transcripts stay valid across providers.
 */

/** Root of a thread's user data. Sub-paths are writable; the bare root is not a file-tool target. */
export const VIRTUAL_PATH_PREFIX = '/mnt/user-data';
export const VIRTUAL_WORKSPACE_PATH = '/mnt/user-data/workspace';
export const VIRTUAL_UPLOADS_PATH = '/mnt/user-data/uploads';
export const VIRTUAL_OUTPUTS_PATH = '/mnt/user-data/outputs';
/** Per-thread workspace of ACP agents: readable through file tools, writable only from bash. */
export const VIRTUAL_ACP_WORKSPACE_PATH = '/mnt/acp-workspace';
/** Default skills root (`skills.container_path`); categories live directly below it. */
export const DEFAULT_SKILLS_CONTAINER_PATH = '/mnt/skills';
/** The same default under the name the configuration schema and the providers use. */
export const DEFAULT_SKILLS_ROOT = DEFAULT_SKILLS_CONTAINER_PATH;

/**
 * Container paths owned by the platform. The skills root may neither equal nor nest with them,
 * because the four skill categories are mounted below it and would shadow (or be shadowed by) them.
 */
export const RESERVED_CONTAINER_PATHS = [
  VIRTUAL_PATH_PREFIX,
  VIRTUAL_ACP_WORKSPACE_PATH,
  '/mnt/integrations',
] as const;

/** Skill categories, always in this order. */
export const SKILL_CATEGORIES = ['public', 'custom', 'legacy', 'integrations'] as const;
export type SkillCategory = (typeof SKILL_CATEGORIES)[number];

/** The three user-data sub-directories, keyed by their role. */
export const USER_DATA_SUBDIRS = ['workspace', 'uploads', 'outputs'] as const;
export type UserDataSubdir = (typeof USER_DATA_SUBDIRS)[number];

/**
 * Host directories of one thread, as the tool layer sees them. Every member is optional because a
 * thread may have only some of its directories prepared; helpers skip what is absent.
 */
export interface ThreadDataPaths {
  readonly workspacePath?: string;
  readonly uploadsPath?: string;
  readonly outputsPath?: string;
  /** Host directory behind `/mnt/acp-workspace` for this thread. */
  readonly acpWorkspacePath?: string;
}

/**
 * `true` when `path` equals `prefix` or lies below it at a segment boundary, so `/mnt/skills`
 * contains `/mnt/skills/public` but not `/mnt/skills-extra`. A prefix of `/` contains every
 * absolute path.
 */
export function isUnderVirtualPrefix(path: string, prefix: string): boolean {
  const root = normalizeVirtualRoot(prefix);
  if (root === '/') return path.startsWith('/');
  return path === root || path.startsWith(`${root}/`);
}

/** Strips trailing slashes from a virtual root; an empty result means `/`. */
export function normalizeVirtualRoot(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 0x2f) end--;
  return end === 0 ? '/' : path.slice(0, end);
}

/** `true` when any `/`- or `\`-separated segment of `path` is exactly `..`. */
export function hasTraversalSegment(path: string): boolean {
  return path.replace(/\\/g, '/').split('/').includes('..');
}
