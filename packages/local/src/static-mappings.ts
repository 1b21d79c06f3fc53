import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { pathMapping, type Logger, type PathMapping } from '@sbx/core';
import {
  SKILL_CATEGORIES,
  VIRTUAL_ACP_WORKSPACE_PATH,
  VIRTUAL_PATH_PREFIX,
  isUnderVirtualPrefix,
  normalizeVirtualRoot,
  sharedSkillsViewPath,
} from '@sbx/core/internal';
import type { LocalMountConfig } from './local-provider-options.js';

/**
 * Public skills plus the configured mounts that pass validation. A bad mount is skipped with a
 * log line rather than failing startup, so one stale entry does not take every thread down.
 */
export function staticMappings(options: {
  readonly mounts: readonly LocalMountConfig[];
  readonly skillsContainerPath: string;
  readonly baseDir: string;
  readonly defaultUserId: string;
  readonly logger: Logger;
}): PathMapping[] {
  const { mounts, baseDir, defaultUserId, logger } = options;
  const skills = options.skillsContainerPath;
  const out: PathMapping[] = [
    pathMapping(`${skills}/public`, sharedSkillsViewPath(baseDir, defaultUserId, 'public'), true),
  ];
  const reserved = [
    ...SKILL_CATEGORIES.map((c) => `${skills}/${c}`),
    VIRTUAL_ACP_WORKSPACE_PATH,
    VIRTUAL_PATH_PREFIX,
  ];
  for (const mount of mounts) {
    const containerPath = normalizeVirtualRoot(mount.containerPath);
    if (!path.isAbsolute(mount.hostPath)) {
      logger.warn('Skipping sandbox mount: host_path must be absolute', {
        host_path: mount.hostPath,
        container_path: mount.containerPath,
      });
      continue;
    }
    if (!containerPath.startsWith('/')) {
      logger.warn('Skipping sandbox mount: container_path must be absolute', {
        host_path: mount.hostPath,
        container_path: mount.containerPath,
      });
      continue;
    }
    const clash = reserved.find((r) => isUnderVirtualPrefix(containerPath, r));
    if (clash) {
      logger.warn(`Skipping sandbox mount: container_path overlaps the reserved path ${clash}`, {
        host_path: mount.hostPath,
        container_path: containerPath,
      });
      continue;
    }
    if (!existsSync(mount.hostPath)) {
      logger.error(
        `Skipping sandbox mount ${mount.hostPath} -> ${containerPath}: the host path does not exist. ` +
          'If the gateway runs in Docker, the host path must be bind-mounted into the gateway ' +
          'container as well (docker-compose volumes), at the same path.',
        { host_path: mount.hostPath, container_path: containerPath },
      );
      continue;
    }
    // Startup-time configuration loading: synchronous resolution is fine here.
    const hostPath = realpathSync(mount.hostPath);
    out.push(pathMapping(containerPath, hostPath, mount.readOnly ?? false));
  }
  return out;
}
