import type { Container, SecurityContext } from './kube-objects.js';
import type { ProvisionerSettings } from './provisioner-settings.js';

/**
 * The security context of every container of a sandbox Pod: the sandbox, the Lark CLI init
 * containers and the broker sidecar (which holds the Lark credentials) alike. None is privileged
 * or may gain privileges (no setuid escalation), all run under the runtime's default seccomp
 * profile, and the configured uid/gid applies to each.
 */
export function containerSecurityContext(settings: ProvisionerSettings): SecurityContext {
  return {
    privileged: false,
    allowPrivilegeEscalation: false,
    seccompProfile: { type: 'RuntimeDefault' },
    ...(settings.runAsUser !== undefined
      ? { runAsUser: settings.runAsUser, runAsNonRoot: settings.runAsUser !== 0 }
      : {}),
    ...(settings.runAsGroup !== undefined ? { runAsGroup: settings.runAsGroup } : {}),
  };
}

/**
 * Sets {@link containerSecurityContext} on each container, replacing whatever was there: applied
 * to the Pod as a whole, so no container added later can be left without it.
 */
export function secureContainers(containers: Container[], settings: ProvisionerSettings): void {
  for (const container of containers)
    container.securityContext = containerSecurityContext(settings);
}
