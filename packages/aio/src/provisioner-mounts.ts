import { posix } from 'node:path';
import { DEFAULT_SKILLS_ROOT, InvalidArgumentError, RESERVED_CONTAINER_PATHS } from '@sbx/core';
import type { MountSpec } from './sandbox-backend.js';

/** The provisioner refuses more extra mounts than this. */
export const PROVISIONER_MAX_EXTRA_MOUNTS = 10;

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

/**
 * Container paths a create request may carry as extra mounts: the ACP workspace, the four skill
 * categories below the skills root, and the Lark CLI integration paths. The provisioner derives
 * the same list from the same root; the two must stay equal.
 */
export function provisionerExtraMountPaths(skillsRoot: string = DEFAULT_SKILLS_ROOT): string[] {
  const root = canonicalSkillsRoot(skillsRoot);
  return [
    ACP_WORKSPACE_MOUNT_PATH,
    ...SKILL_MOUNT_CATEGORIES.map((c) => `${root}/${c}`),
    LARK_CLI_CONFIG_MOUNT_PATH,
    LARK_CLI_LOCKS_MOUNT_PATH,
    LARK_CLI_DATA_MOUNT_PATH,
    LARK_CLI_RUNTIME_MOUNT_PATH,
  ];
}

export interface ProvisionerMount {
  host_path: string;
  container_path: string;
  read_only: boolean;
}

/**
 * The extra mounts a create request forwards: only allowlisted container paths (thread data and
 * the like are the provisioner's own business), in order, without the Lark CLI runtime mount when
 * the provisioner provisions that runtime itself.
 */
export function provisionerExtraMounts(
  mounts: readonly MountSpec[],
  options: { skillsRoot?: string; provisionsLarkCliRuntime?: boolean } = {},
): ProvisionerMount[] {
  const allowed = new Set(provisionerExtraMountPaths(options.skillsRoot));
  if (options.provisionsLarkCliRuntime) allowed.delete(LARK_CLI_RUNTIME_MOUNT_PATH);
  return mounts
    .filter((m) => allowed.has(posix.normalize(m.containerPath).replace(/\/+$/, '')))
    .map((m) => ({
      host_path: m.hostPath,
      container_path: m.containerPath,
      read_only: m.readOnly,
    }));
}
