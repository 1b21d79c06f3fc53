import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, assertSafePathSegment, silentLogger, threadLayout } from '@sbx/core';
import {
  SKILL_CATEGORIES,
  VIRTUAL_ACP_WORKSPACE_PATH,
  VIRTUAL_OUTPUTS_PATH,
  VIRTUAL_UPLOADS_PATH,
  VIRTUAL_WORKSPACE_PATH,
  sharedSkillsViewPath,
} from '@sbx/core/internal';
import type { Logger, SkillCategory } from '@sbx/core';
import type { MountSpec } from './sandbox-backend.js';

/** What one thread's sandbox mounts, derived from (user, thread, policy) and the skills root. */
export interface SandboxMountPlanInput {
  readonly userId: string;
  readonly threadId: string;
  /** The canonical skills root snapshotted at provider start-up. */
  readonly skillsRoot: string;
  /** The lead agent runs under an explicit skill policy: mount the thread's own projection. */
  readonly explicitSkillPolicy: boolean;
  /** Where this process creates the directories. */
  readonly baseDir: string;
  /** Where the container engine finds them; differs from `baseDir` under Docker-outside-of-Docker. */
  readonly hostBaseDir: string;
}

/** A group of mounts that stands or falls together (its directories are created first). */
export interface MountGroup {
  readonly name: 'thread' | 'skills' | 'integrations';
  readonly mounts: readonly MountSpec[];
  /** Local directories the group needs, with the mode to force (after umask) where it matters. */
  readonly directories: readonly { readonly path: string; readonly mode?: number }[];
}

/** Agents in the sandbox may run as another uid; the ACP workspace must stay writable for them. */
const ACP_WORKSPACE_MODE = 0o777;

function isWindowsStyle(base: string): boolean {
  return /^[A-Za-z]:[\\/]/.test(base) || base.includes('\\');
}

/** Joins below the host base in that base's own style, so a Windows base keeps backslashes. */
function hostJoin(base: string, ...segments: string[]): string {
  return isWindowsStyle(base)
    ? path.win32.join(base, ...segments)
    : path.posix.join(base, ...segments);
}

/**
 * The per-thread mounts, in priority order (a container path given twice keeps the first):
 * 1. thread data: `user-data/{workspace,uploads,outputs}` read-write, the ACP workspace read-only;
 * 2. skills: `<root>/{public,custom,legacy}` read-only, from the shared views, or from the
 *    thread's own projection under an explicit skill policy;
 * 3. integrations: `<root>/integrations` read-only, from the same source.
 * Configured mounts (`sandbox.mounts`) come before all of these; the backend adds them.
 *
 * @throws InvalidArgumentError for a user or thread id that is not one safe path segment
 */
export function planSandboxMounts(input: SandboxMountPlanInput): MountGroup[] {
  const user = assertSafePathSegment('userId', input.userId);
  const thread = assertSafePathSegment('threadId', input.threadId);
  const local = threadLayout(input.baseDir, user, thread);
  const hb = input.hostBaseDir;
  const threadRel = ['users', user, 'threads', thread];
  const host = {
    workspace: hostJoin(hb, ...threadRel, 'user-data', 'workspace'),
    uploads: hostJoin(hb, ...threadRel, 'user-data', 'uploads'),
    outputs: hostJoin(hb, ...threadRel, 'user-data', 'outputs'),
    acp: hostJoin(hb, ...threadRel, 'acp-workspace'),
  };
  const root = input.skillsRoot;
  const skillSource = (category: SkillCategory) =>
    input.explicitSkillPolicy
      ? {
          local: path.join(local.threadSkillsViewPath, category),
          host: hostJoin(hb, ...threadRel, 'skills_view', category),
        }
      : {
          local: sharedSkillsViewPath(input.baseDir, user, category),
          host:
            category === 'public'
              ? hostJoin(hb, 'skills_view', 'public')
              : hostJoin(hb, 'users', user, 'skills_view', category),
        };
  const skillGroup = (categories: readonly SkillCategory[]) => {
    const sources = categories.map((c) => ({ category: c, ...skillSource(c) }));
    return {
      mounts: sources.map((s) => ({
        hostPath: s.host,
        containerPath: `${root}/${s.category}`,
        readOnly: true,
      })),
      directories: sources.map((s) => ({ path: s.local })),
    };
  };
  return [
    {
      name: 'thread',
      mounts: [
        { hostPath: host.workspace, containerPath: VIRTUAL_WORKSPACE_PATH, readOnly: false },
        { hostPath: host.uploads, containerPath: VIRTUAL_UPLOADS_PATH, readOnly: false },
        { hostPath: host.outputs, containerPath: VIRTUAL_OUTPUTS_PATH, readOnly: false },
        { hostPath: host.acp, containerPath: VIRTUAL_ACP_WORKSPACE_PATH, readOnly: true },
      ],
      directories: [
        { path: local.workspacePath },
        { path: local.uploadsPath },
        { path: local.outputsPath },
        { path: local.acpWorkspacePath, mode: ACP_WORKSPACE_MODE },
      ],
    },
    {
      name: 'skills',
      ...skillGroup(SKILL_CATEGORIES.filter((c) => c !== 'integrations')),
    },
    { name: 'integrations', ...skillGroup(['integrations']) },
  ];
}

/** Drops later mounts whose container path was already mounted, with a warning each. */
export function dedupeMounts(
  mounts: readonly MountSpec[],
  logger: Logger = silentLogger,
): MountSpec[] {
  const seen = new Set<string>();
  const out: MountSpec[] = [];
  for (const m of mounts) {
    const key = path.posix.normalize(m.containerPath).replace(/\/+$/, '');
    if (seen.has(key)) {
      logger.warn(`Dropping duplicate sandbox mount for ${key}; keeping the first`, {
        host_path: m.hostPath,
        container_path: m.containerPath,
      });
      continue;
    }
    seen.add(key);
    out.push(m);
  }
  return out;
}

/**
 * Creates each group's directories and returns the mounts of the groups that could be prepared.
 * A group whose directories cannot be created is logged and contributes nothing: one unwritable
 * skills view must not keep the thread from getting a sandbox at all.
 */
export async function prepareSandboxMounts(
  groups: readonly MountGroup[],
  logger: Logger = silentLogger,
): Promise<MountSpec[]> {
  const prepared = await Promise.all(
    groups.map(async (group) => {
      try {
        for (const dir of group.directories) {
          await mkdir(dir.path, { recursive: true });
          if (dir.mode !== undefined) await chmod(dir.path, dir.mode);
        }
        return group.mounts;
      } catch (err) {
        logger.error(`Could not prepare the ${group.name} mounts of a sandbox; skipping them`, {
          error: errorMessage(err),
        });
        return [];
      }
    }),
  );
  return dedupeMounts(prepared.flat(), logger);
}
