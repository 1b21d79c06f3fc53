import { posix } from 'node:path';
import { DEFAULT_SKILLS_ROOT, RESERVED_CONTAINER_PATHS } from '../paths/virtual-paths.js';
import { InvalidArgumentError } from '../errors/errors.js';

// What a gateway (@sbx/aio's remote backend) and the provisioner (@sbx/provisioner) must agree on.
// Both import these values from here, so the allowlist a gateway filters with and the one a
// provisioner validates with are one literal and cannot drift apart.

/** The provisioner refuses more extra mounts than this. */
export const PROVISIONER_MAX_EXTRA_MOUNTS = 10;

/**
 * Thread ids a provisioner accepts: one to 64 characters of `[A-Za-z0-9_-]`. A thread id becomes
 * a Kubernetes object label value and a volume sub-path, so nothing else may pass.
 */
export const PROVISIONER_THREAD_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** User ids a provisioner accepts (a path segment of the user-data volume). */
export const PROVISIONER_USER_ID_PATTERN = /^[A-Za-z0-9_-]+$/;

/** The four skill categories mounted below the skills root, in order. */
export const SKILL_MOUNT_CATEGORIES = ['public', 'custom', 'legacy', 'integrations'] as const;

export const ACP_WORKSPACE_MOUNT_PATH = '/mnt/acp-workspace';
export const LARK_CLI_CONFIG_MOUNT_PATH = '/mnt/integrations/lark-cli/config';
export const LARK_CLI_LOCKS_MOUNT_PATH = '/mnt/integrations/lark-cli/config/locks';
export const LARK_CLI_DATA_MOUNT_PATH = '/mnt/integrations/lark-cli/data';
/** Dropped from a create request when the provisioner provisions the runtime itself. */
export const LARK_CLI_RUNTIME_MOUNT_PATH = '/mnt/integrations/lark-cli/runtime';

function overlaps(a: string, b: string): boolean {
  const within = (p: string, prefix: string) => p === prefix || p.startsWith(`${prefix}/`);
  return within(a, b) || within(b, a);
}

/**
 * The one canonical skills root: absolute, normalised, without a trailing `/` (one is tolerated
 * and removed), not `/`, and neither equal to nor nested with a reserved platform mount
 * (`/mnt/user-data`, `/mnt/acp-workspace`, `/mnt/integrations`): the categories mounted below it
 * would shadow those, or be shadowed by them.
 */
export function canonicalSkillsRoot(root: string = DEFAULT_SKILLS_ROOT): string {
  if (typeof root !== 'string' || !root.startsWith('/')) {
    throw new InvalidArgumentError(`skills root must be an absolute container path, got '${root}'`);
  }
  const trimmed = root.replace(/\/+$/, '');
  if (trimmed === '')
    throw new InvalidArgumentError('skills root must not be the container root "/"');
  if (posix.normalize(trimmed) !== trimmed) {
    throw new InvalidArgumentError(
      `skills root must be canonical (no "..", "." or repeated "/"), got '${root}'`,
    );
  }
  const clash = RESERVED_CONTAINER_PATHS.find((reserved) => overlaps(trimmed, reserved));
  if (clash) {
    throw new InvalidArgumentError(`skills root '${trimmed}' overlaps the reserved mount ${clash}`);
  }
  return trimmed;
}

/** The four category mount paths below a (canonical) skills root, in category order. */
export function skillCategoryMountPaths(skillsRoot: string = DEFAULT_SKILLS_ROOT): string[] {
  const root = canonicalSkillsRoot(skillsRoot);
  return SKILL_MOUNT_CATEGORIES.map((c) => `${root}/${c}`);
}

/**
 * Container paths a create request may carry as extra mounts: the ACP workspace, the four skill
 * categories below the skills root, and the Lark CLI integration paths.
 */
export function provisionerExtraMountPaths(skillsRoot: string = DEFAULT_SKILLS_ROOT): string[] {
  return [
    ACP_WORKSPACE_MOUNT_PATH,
    ...skillCategoryMountPaths(skillsRoot),
    LARK_CLI_CONFIG_MOUNT_PATH,
    LARK_CLI_LOCKS_MOUNT_PATH,
    LARK_CLI_DATA_MOUNT_PATH,
    LARK_CLI_RUNTIME_MOUNT_PATH,
  ];
}

/** One extra mount of a create request, as it travels over the wire. */
export interface ProvisionerMount {
  host_path: string;
  container_path: string;
  read_only: boolean;
}
