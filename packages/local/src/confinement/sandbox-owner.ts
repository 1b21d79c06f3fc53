/**
 * The host user a confined command runs as.
 *
 * A user namespace maps its user onto the host user that created it. A gateway running as root
 * that started bubblewrap itself would map the sandbox user onto host root, and every root-owned
 * host file bound into the namespace would be the command's own (owner access to whatever is
 * visible, and to `/etc/shadow` were it visible). So a root gateway starts the namespace as an
 * unprivileged host user instead: `sandbox.local.sandbox_uid` / `sandbox_gid`, default 65534
 * (`nobody`). The thread's writable directories are handed to that user; everything else stays
 * root's. A gateway that is not root runs commands as itself: its user owns the thread's files
 * already, and nothing of the host beyond the namespace's mounts is reachable.
 */
export interface SandboxOwner {
  readonly uid: number;
  readonly gid: number;
}

export const DEFAULT_SANDBOX_UID = 65534;
export const DEFAULT_SANDBOX_GID = 65534;

/**
 * `undefined` when the gateway is not root (commands run as the gateway's user); the configured
 * (or default) unprivileged user when it is.
 */
export function sandboxOwnerFor(
  gatewayUid: number | undefined,
  configured: Partial<SandboxOwner>,
): SandboxOwner | undefined {
  if (gatewayUid !== 0) return undefined;
  return {
    uid: configured.uid ?? DEFAULT_SANDBOX_UID,
    gid: configured.gid ?? DEFAULT_SANDBOX_GID,
  };
}
