import { stat } from 'node:fs/promises';
import { posix } from 'node:path';
import {
  InvalidArgumentError,
  SandboxPermissionError,
  SandboxRuntimeError,
  shellQuote,
} from '@sbx/core';
import {
  RESERVED_CONTAINER_PATHS,
  SKILL_CATEGORIES,
  VIRTUAL_PATH_PREFIX,
} from '@sbx/core/internal';
import type { Clock, Logger, SkillProjectionCategory } from '@sbx/core';
import type { E2BRemoteSandbox } from './e2b-client.js';
import { commandExitResult } from './e2b-errors.js';
import { UploadPass, uploadTree } from './tree-upload.js';

/** Written beside the four categories after a successful sync. */
export const SKILLS_SIGNATURE_FILE = '.sbx-skills-signature';
/**
 * Markers older layouts left in the VM. They are deleted, never trusted: a marker inside the VM
 * says nothing about whether the tree next to it is intact.
 */
export const LEGACY_SIGNATURE_FILES = ['.skills-signature', '.projection-manifest.json'] as const;

/** Operating-system trees a skills root may never be, nor lie below. */
export const SYSTEM_TREES = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/proc',
  '/root',
  '/run',
  '/sbin',
  '/sys',
  '/usr',
  '/var',
] as const;
/** Top-level directories a skills root may lie below but never be. */
const TOP_LEVEL_ONLY = ['/home', '/mnt', '/opt', '/srv', '/tmp', '/media'] as const;

const within = (p: string, prefix: string): boolean => p === prefix || p.startsWith(`${prefix}/`);

/**
 * Refuses a skills root before anything is deleted: it must be canonical (absolute, normalised,
 * no trailing `/`), not `/` or a top-level directory, not inside an operating-system tree, and
 * neither equal to, inside, nor above a protected location (`/mnt/user-data`, the ACP workspace,
 * the VM home directory, the platform mounts).
 */
export function assertSafeSkillsRoot(root: string, homeDir: string): void {
  const reject = (why: string): never => {
    throw new SandboxPermissionError(
      `Refusing to sync agent skills into ${JSON.stringify(root)}: ${why}`,
      {
        path: root,
        operation: 'sync_agent_skills',
      },
    );
  };
  if (typeof root !== 'string' || !root.startsWith('/')) reject('not an absolute path');
  if (root === '/' || posix.normalize(root) !== root || root.endsWith('/'))
    reject('not a canonical path');
  if ((TOP_LEVEL_ONLY as readonly string[]).includes(root)) reject('a top-level system directory');
  for (const tree of SYSTEM_TREES)
    if (within(root, tree)) reject(`inside the operating-system tree ${tree}`);
  const protectedPaths = [VIRTUAL_PATH_PREFIX, ...RESERVED_CONTAINER_PATHS, homeDir];
  for (const p of protectedPaths) {
    if (within(root, p) || within(p, root)) reject(`overlaps the protected path ${p}`);
  }
}

function assertProjection(projection: readonly SkillProjectionCategory[]): void {
  const seen = new Set<string>();
  for (const entry of projection) {
    if (!(SKILL_CATEGORIES as readonly string[]).includes(entry.category)) {
      throw new InvalidArgumentError(
        `unknown skill projection category ${JSON.stringify(entry.category)}`,
      );
    }
    if (seen.has(entry.category)) {
      throw new InvalidArgumentError(`skill projection category ${entry.category} given twice`);
    }
    seen.add(entry.category);
  }
}

async function runChecked(
  remote: E2BRemoteSandbox,
  cmd: string,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  try {
    return await remote.commands.run(cmd, { timeoutMs: 60_000 });
  } catch (error) {
    const exited = commandExitResult(error);
    if (exited) return exited;
    throw error;
  }
}

export interface SkillSyncInput {
  root: string;
  homeDir: string;
  projection: readonly SkillProjectionCategory[];
  signature: string;
  clock: Pick<Clock, 'now'>;
  logger: Logger;
}

/**
 * Rebuilds the four managed category directories of `root` from the thread projection, strictly
 * (any failure propagates). Order matters: every check — the root's shape, the projection, the
 * host directories, and symlinks at the root or a category inside the VM — happens before the
 * first deletion.
 */
export async function syncSkillsInto(
  remote: E2BRemoteSandbox,
  input: SkillSyncInput,
): Promise<void> {
  const { root } = input;
  assertSafeSkillsRoot(root, input.homeDir);
  assertProjection(input.projection);
  for (const entry of input.projection) {
    const s = await stat(entry.hostDir).catch(() => undefined);
    if (!s?.isDirectory()) {
      throw new InvalidArgumentError(
        `skill projection directory for ${entry.category} is missing: ${entry.hostDir}`,
      );
    }
  }
  const categories = SKILL_CATEGORIES.map((c) => `${root}/${c}`);
  const q = shellQuote(root);
  // A symlinked root (or any symlinked ancestor) resolves somewhere else: `rm -rf` below would
  // then delete whatever it points at. Checked in the VM, where the link would be.
  const probe = [
    `R=${q}`,
    'if [ -L "$R" ]; then echo SYMLINK_ROOT; fi',
    'if [ -e "$R" ] && [ "$(readlink -f -- "$R")" != "$R" ]; then echo SYMLINK_ANCESTOR; fi',
    ...categories.map((c) => `if [ -L ${shellQuote(c)} ]; then echo SYMLINK_CATEGORY; fi`),
    'true',
  ].join('\n');
  const probed = await runChecked(remote, probe);
  if (probed.stdout.includes('SYMLINK')) {
    throw new SandboxPermissionError(
      `Refusing to sync agent skills into ${JSON.stringify(root)}: symlinked root`,
      {
        path: root,
        operation: 'sync_agent_skills',
      },
    );
  }
  const markers = [SKILLS_SIGNATURE_FILE, ...LEGACY_SIGNATURE_FILES].map((m) =>
    shellQuote(`${root}/${m}`),
  );
  const reset = await runChecked(
    remote,
    [
      'set -e',
      `sudo mkdir -p ${q}`,
      `sudo chown "$(id -u):$(id -g)" ${q} 2>/dev/null || true`,
      `chmod -R u+w ${categories.map(shellQuote).join(' ')} 2>/dev/null || true`,
      `rm -rf -- ${categories.map(shellQuote).join(' ')} ${markers.join(' ')}`,
      `mkdir -p ${categories.map(shellQuote).join(' ')}`,
    ].join('\n'),
  );
  if (reset.exitCode !== 0) {
    throw new SandboxRuntimeError(
      `Failed to reset the skills root ${root}: ${reset.stderr.trim() || reset.stdout.trim()}`,
    );
  }
  const pass = new UploadPass(input.clock, {}, input.logger);
  for (const entry of input.projection) {
    await uploadTree(remote, entry.hostDir, `${root}/${entry.category}`, pass, {
      readOnly: true,
      strict: true,
      logger: input.logger,
    });
    if (pass.stopped) {
      throw new SandboxRuntimeError(`Agent skill sync stopped: ${pass.stopped}`);
    }
  }
  await remote.files.write(`${root}/${SKILLS_SIGNATURE_FILE}`, `${input.signature}\n`);
}
