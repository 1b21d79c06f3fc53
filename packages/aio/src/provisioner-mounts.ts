import { posix } from 'node:path';
import { provisionerExtraMountPaths } from '@sbx/core';
import { LARK_CLI_RUNTIME_MOUNT_PATH } from '@sbx/core/internal';
import type { ProvisionerMount } from '@sbx/core';
import type { MountSpec } from './sandbox-backend.js';

/**
 * The extra mounts a create request forwards: only allowlisted container paths (thread data and
 * the like are the provisioner's own business), in order, without the Lark CLI runtime mount when
 * the provisioner provisions that runtime itself. The allowlist is core's, the same literal the
 * provisioner validates with.
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
