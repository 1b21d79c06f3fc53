import { posix } from 'node:path';
import { provisionerExtraMountPaths } from '@sbx/core';
import { PROVISIONER_MAX_EXTRA_MOUNTS } from '@sbx/core/internal';
import type { ExtraMountRequest } from './create-request.js';
import { ProvisionerHttpError } from './provisioner-errors.js';
import { tenantRootProblem } from './tenant-roots.js';
import type { MountTenancy } from './tenant-roots.js';

/** An extra mount that passed the rules: both paths normalised, the host path under the base. */
export interface ValidatedExtraMount extends ExtraMountRequest {
  /** The host path relative to the host base (for the user-data PVC sub-path); never empty. */
  relativeHostPath: string;
}

function refuse(message: string): never {
  throw new ProvisionerHttpError(400, message);
}

function normalised(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 ? n.replace(/\/+$/, '') : n;
}

/**
 * The rules of an extra mount request, checked on the normalised paths (`..`, `.`, repeated and
 * trailing `/` resolved by segments before any comparison; nothing on the node is resolved, see
 * below): at most ten; the host path absolute and under the host base (by path segments, so
 * `/data-evil` is not under `/data`); the host path neither containing nor inside a root that is
 * not the request's own (`tenantRootProblem`: every tenant, another user or thread, any user data,
 * a skills root, the former threads directory); the container path absolute and in the allowlist
 * shared with the gateway (derived from the request's skills root); no container path twice.
 *
 * What this cannot check: the kubelet resolves the host path on the node, so a symlink placed
 * under the host base by someone who can write there could point elsewhere. Apart from the user
 * data refused here, the host base must be writable only by the gateway (see the README).
 *
 * @throws ProvisionerHttpError 400 naming the first offending mount
 */
export function validateExtraMounts(
  mounts: readonly ExtraMountRequest[],
  hostBase: string,
  skillsRoot: string,
  tenancy: MountTenancy,
): ValidatedExtraMount[] {
  if (mounts.length > PROVISIONER_MAX_EXTRA_MOUNTS) {
    refuse(
      `at most ${PROVISIONER_MAX_EXTRA_MOUNTS} extra mounts are allowed, got ${mounts.length}`,
    );
  }
  if (mounts.length > 0 && hostBase === '') {
    refuse('extra mounts are refused: the provisioner has no host base directory configured');
  }
  const allowed = new Set(provisionerExtraMountPaths(skillsRoot));
  const seen = new Set<string>();
  return mounts.map((m, i) => {
    if (m.hostPath.includes('\0') || m.containerPath.includes('\0')) {
      refuse(`extra_mounts[${i}]: paths must not contain NUL`);
    }
    if (!m.hostPath.startsWith('/')) refuse(`extra_mounts[${i}]: host_path must be absolute`);
    const hostPath = normalised(m.hostPath);
    const relative = posix.relative(hostBase, hostPath);
    if (
      relative === '' ||
      relative === '..' ||
      relative.startsWith('../') ||
      posix.isAbsolute(relative)
    ) {
      refuse(`extra_mounts[${i}]: host_path ${hostPath} is not under the host base ${hostBase}`);
    }
    const problem = tenantRootProblem(relative, tenancy);
    if (problem !== undefined) refuse(`extra_mounts[${i}]: host_path ${hostPath} ${problem}`);
    if (!m.containerPath.startsWith('/'))
      refuse(`extra_mounts[${i}]: container_path must be absolute`);
    const containerPath = normalised(m.containerPath);
    if (!allowed.has(containerPath)) {
      refuse(
        `extra_mounts[${i}]: container_path ${containerPath} is not an allowed extra mount path`,
      );
    }
    if (seen.has(containerPath))
      refuse(`extra_mounts[${i}]: container_path ${containerPath} is mounted twice`);
    seen.add(containerPath);
    return { hostPath, containerPath, readOnly: m.readOnly, relativeHostPath: relative };
  });
}

/**
 * A sub-path on a shared PVC: relative, normalised, no `..` segment, not empty. Applied to every
 * sub-path the provisioner derives from request values, so a crafted id can never climb out.
 */
export function safeSubPath(subPath: string): string {
  const n = posix.normalize(subPath);
  if (n === '.' || n === '' || n.startsWith('/') || n.split('/').includes('..')) {
    throw new ProvisionerHttpError(400, `refusing the volume sub-path '${subPath}'`);
  }
  return n.replace(/\/+$/, '');
}
