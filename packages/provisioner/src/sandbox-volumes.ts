import { posix } from 'node:path';
import {
  LARK_CLI_CONFIG_MOUNT_PATH,
  LARK_CLI_DATA_MOUNT_PATH,
  LARK_CLI_LOCKS_MOUNT_PATH,
  LARK_CLI_RUNTIME_MOUNT_PATH,
  skillCategoryMountPaths,
} from '@sbx/core/internal';
import type { CreateSandboxRequest } from './create-request.js';
import { safeSubPath, validateExtraMounts } from './extra-mount-rules.js';
import type { ValidatedExtraMount } from './extra-mount-rules.js';
import type { Container, Volume, VolumeMount } from './kube-objects.js';
import { legacyThreadsDirBelow } from './tenant-roots.js';
import type { ProvisionerSettings } from './provisioner-settings.js';

export const USER_DATA_MOUNT_PATH = '/mnt/user-data';
export const LARK_BROKER_URL = 'http://127.0.0.1:8788';
export const LARK_BROKER_URL_ENV = 'DEERFLOW_LARK_BROKER_URL';
export const LARK_BROKER_DENY_ENV = 'DEERFLOW_LARK_BROKER_DENY_SUBCOMMANDS';
const LARK_RUNTIME_VOLUME = 'lark-cli-runtime';
/** Where the Lark CLI init images install the runtime (the reference images read this). */
export const LARK_RUNTIME_DEST_ENV = 'LARK_CLI_RUNTIME_DEST';
/** Where the broker image's CLI keeps its configuration and data (the reference's defaults). */
export const LARK_CONFIG_DIR_ENV = 'LARKSUITE_CLI_CONFIG_DIR';
export const LARK_DATA_DIR_ENV = 'LARKSUITE_CLI_DATA_DIR';
/** Where the broker sidecar sees the credential mounts the sandbox container no longer has. */
const BROKER_CONFIG_DIR = '/var/lark/config';
const BROKER_DATA_DIR = '/var/lark/data';
const BROKER_PATHS: Readonly<Record<string, { path: string; readOnly: boolean }>> = {
  [LARK_CLI_CONFIG_MOUNT_PATH]: { path: BROKER_CONFIG_DIR, readOnly: true },
  [LARK_CLI_LOCKS_MOUNT_PATH]: { path: `${BROKER_CONFIG_DIR}/locks`, readOnly: false },
  [LARK_CLI_DATA_MOUNT_PATH]: { path: BROKER_DATA_DIR, readOnly: false },
};

/** Everything of a sandbox Pod that depends on the request's mounts and integrations. */
export interface SandboxVolumePlan {
  volumes: Volume[];
  /** The sandbox container's mounts, in order. */
  mounts: VolumeMount[];
  initContainers: Container[];
  sidecars: Container[];
  /** Extra environment of the sandbox container. */
  env: { name: string; value: string }[];
}

/** Which Lark CLI pattern a create gets: the broker supersedes the init-only runtime. */
export function larkPattern(
  settings: ProvisionerSettings,
  request: CreateSandboxRequest,
): 'broker' | 'init' | 'none' {
  if (settings.larkCliBrokerImage !== '' && request.provisionLarkCliBroker) return 'broker';
  if (settings.larkCliInitImage !== '' && request.provisionLarkCliRuntime) return 'init';
  return 'none';
}

function fillTemplate(template: string, request: CreateSandboxRequest): string {
  return template
    .replaceAll('{user_id}', request.userId)
    .replaceAll('{thread_id}', request.threadId);
}

/**
 * The volumes and mounts of one sandbox, in the order the reference pins: the skills views (three
 * hostPath views, or one skills PVC), the thread's user data, then the extra mounts as `extra-N`.
 *
 * A request carrying all four skill categories as extra mounts gets none of the default skills
 * volumes; one carrying some of them loses just the default mounts those replace (two mounts at one
 * path would make the Pod invalid).
 *
 * @throws ProvisionerHttpError 400 when an extra mount breaks a rule
 */
export function planSandboxVolumes(
  settings: ProvisionerSettings,
  request: CreateSandboxRequest,
): SandboxVolumePlan {
  const extras = validateExtraMounts(
    request.extraMounts,
    settings.hostBaseDir,
    request.skillsRoot,
    {
      userId: request.userId,
      threadId: request.threadId,
      legacyThreadsDir: legacyThreadsDirBelow(settings.hostBaseDir, settings.threadsHostPath),
    },
  );
  const pattern = larkPattern(settings, request);
  const plan: SandboxVolumePlan = {
    volumes: [],
    mounts: [],
    initContainers: [],
    sidecars: [],
    env: [],
  };
  const overridden = new Set(extras.map((m) => m.containerPath));
  const categories = skillCategoryMountPaths(request.skillsRoot);
  const allOverridden = categories.every((p) => overridden.has(p));

  if (!allOverridden) addDefaultSkills(plan, settings, request, overridden);
  addUserData(plan, settings, request);

  extras.forEach((mount, index) => {
    const name = `extra-${index}`;
    // A provisioned runtime replaces the gateway's runtime mount.
    if (pattern !== 'none' && mount.containerPath === LARK_CLI_RUNTIME_MOUNT_PATH) return;
    plan.volumes.push(extraVolume(name, mount, settings));
    const onUserDataPvc = settings.userDataPvcName !== '';
    const subPath = onUserDataPvc
      ? {
          subPath: safeSubPath(
            posix.join(settings.userDataPvcSubpathPrefix, mount.relativeHostPath),
          ),
        }
      : {};
    const broker = pattern === 'broker' ? BROKER_PATHS[mount.containerPath] : undefined;
    if (broker) {
      // The credentials stay with the broker: the agent's container never sees them.
      brokerSidecar(plan, settings).volumeMounts!.push({
        name,
        mountPath: broker.path,
        readOnly: broker.readOnly,
        ...subPath,
      });
      return;
    }
    plan.mounts.push({
      name,
      mountPath: mount.containerPath,
      readOnly: mount.readOnly,
      ...subPath,
    });
  });

  if (pattern !== 'none') addLarkRuntime(plan, settings, pattern);
  return plan;
}

function addDefaultSkills(
  plan: SandboxVolumePlan,
  settings: ProvisionerSettings,
  request: CreateSandboxRequest,
  overridden: ReadonlySet<string>,
): void {
  const root = request.skillsRoot;
  if (settings.skillsPvcName !== '') {
    plan.volumes.push({
      name: 'skills',
      persistentVolumeClaim: { claimName: settings.skillsPvcName, readOnly: true },
    });
    const template = settings.skillsPvcSubpathTemplate;
    plan.mounts.push({
      name: 'skills',
      mountPath: root,
      readOnly: true,
      ...(template !== '' ? { subPath: safeSubPath(fillTemplate(template, request)) } : {}),
    });
    return;
  }
  const base = settings.hostBaseDir;
  const views: [string, string][] = [
    ['public', posix.join(base, 'skills_view', 'public')],
    ['custom', posix.join(base, 'users', request.userId, 'skills_view', 'custom')],
    // Always mounted (an empty view when the user has no legacy skills), so a change of what the
    // user may see needs no new Pod.
    ['legacy', posix.join(base, 'users', request.userId, 'skills_view', 'legacy')],
  ];
  for (const [category, hostPath] of views) {
    const mountPath = `${root}/${category}`;
    if (overridden.has(mountPath)) continue;
    plan.volumes.push({
      name: `skills-${category}`,
      hostPath: { path: hostPath, type: 'Directory' },
    });
    plan.mounts.push({ name: `skills-${category}`, mountPath, readOnly: true });
  }
}

/** `users/<user>/threads/<thread>/user-data`: the gateway's layout, keyed by user AND thread. */
function userDataRelativePath(request: CreateSandboxRequest): string {
  return posix.join('users', request.userId, 'threads', request.threadId, 'user-data');
}

/**
 * The thread's user data, below the host base (hostPath) or the PVC prefix, at the same relative
 * path either way: two users with one thread id never share a directory.
 */
function addUserData(
  plan: SandboxVolumePlan,
  settings: ProvisionerSettings,
  request: CreateSandboxRequest,
): void {
  if (settings.userDataPvcName !== '') {
    plan.volumes.push({
      name: 'user-data',
      persistentVolumeClaim: { claimName: settings.userDataPvcName },
    });
    const subPath = safeSubPath(
      posix.join(settings.userDataPvcSubpathPrefix, userDataRelativePath(request)),
    );
    plan.mounts.push({
      name: 'user-data',
      mountPath: USER_DATA_MOUNT_PATH,
      readOnly: false,
      subPath,
    });
    return;
  }
  // The settings refuse hostPath mode without a host base, so this is never relative.
  plan.volumes.push({
    name: 'user-data',
    hostPath: {
      path: posix.join(settings.hostBaseDir, safeSubPath(userDataRelativePath(request))),
      type: 'DirectoryOrCreate',
    },
  });
  plan.mounts.push({ name: 'user-data', mountPath: USER_DATA_MOUNT_PATH, readOnly: false });
}

function extraVolume(
  name: string,
  mount: ValidatedExtraMount,
  settings: ProvisionerSettings,
): Volume {
  if (settings.userDataPvcName !== '') {
    return { name, persistentVolumeClaim: { claimName: settings.userDataPvcName } };
  }
  return {
    name,
    hostPath: { path: mount.hostPath, type: mount.readOnly ? 'Directory' : 'DirectoryOrCreate' },
  };
}

function brokerSidecar(plan: SandboxVolumePlan, settings: ProvisionerSettings): Container {
  let sidecar = plan.sidecars.find((c) => c.name === 'lark-cli-broker');
  if (!sidecar) {
    sidecar = {
      name: 'lark-cli-broker',
      image: settings.larkCliBrokerImage,
      imagePullPolicy: 'IfNotPresent',
      args: ['serve'],
      // The broker's CLI reads its credentials where the sidecar mounts them.
      env: [
        { name: LARK_CONFIG_DIR_ENV, value: BROKER_CONFIG_DIR },
        { name: LARK_DATA_DIR_ENV, value: BROKER_DATA_DIR },
      ],
      volumeMounts: [],
    };
    if (settings.larkBrokerDenySubcommands !== '') {
      sidecar.env!.push({ name: LARK_BROKER_DENY_ENV, value: settings.larkBrokerDenySubcommands });
    }
    plan.sidecars.push(sidecar);
  }
  return sidecar;
}

function addLarkRuntime(
  plan: SandboxVolumePlan,
  settings: ProvisionerSettings,
  pattern: 'broker' | 'init',
): void {
  plan.volumes.push({ name: LARK_RUNTIME_VOLUME, emptyDir: {} });
  const initMount = {
    name: LARK_RUNTIME_VOLUME,
    mountPath: LARK_CLI_RUNTIME_MOUNT_PATH,
    readOnly: false,
  };
  if (pattern === 'broker') {
    plan.initContainers.push({
      name: 'lark-cli-shim-init',
      image: settings.larkCliBrokerImage,
      imagePullPolicy: 'IfNotPresent',
      args: ['install-shim', LARK_CLI_RUNTIME_MOUNT_PATH],
      env: [{ name: LARK_RUNTIME_DEST_ENV, value: LARK_CLI_RUNTIME_MOUNT_PATH }],
      volumeMounts: [initMount],
    });
    brokerSidecar(plan, settings);
    plan.env.push({ name: LARK_BROKER_URL_ENV, value: LARK_BROKER_URL });
  } else {
    plan.initContainers.push({
      name: 'lark-cli-init',
      image: settings.larkCliInitImage,
      imagePullPolicy: 'IfNotPresent',
      env: [{ name: LARK_RUNTIME_DEST_ENV, value: LARK_CLI_RUNTIME_MOUNT_PATH }],
      volumeMounts: [initMount],
    });
  }
  plan.mounts.push({
    name: LARK_RUNTIME_VOLUME,
    mountPath: LARK_CLI_RUNTIME_MOUNT_PATH,
    readOnly: true,
  });
}
