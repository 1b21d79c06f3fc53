import {
  detectCgroups,
  hostCgroupSource,
  type CgroupDetection,
  type CgroupDetectionSource,
} from './cgroup-detect.js';
import { DEFAULT_CONFINEMENT_LIMITS, type ConfinementLimits } from './cgroup-limits.js';
import { realProbeHost, type ProbeHost } from './confinement-probe-host.js';
import { PRLIMIT_CANDIDATES } from './rlimit-wrapper.js';
import { DEFAULT_SANDBOX_GID, DEFAULT_SANDBOX_UID, type SandboxOwner } from './sandbox-owner.js';

export type ConfinementCheckStatus = 'ok' | 'fail' | 'skip';

/** One finding of `probeConfinementHost`, with the change that fixes a failure. */
export interface ConfinementCheck {
  readonly id:
    | 'confinement.bwrap'
    | 'confinement.userns'
    | 'confinement.seccomp'
    | 'confinement.cgroups'
    | 'confinement.limits';
  readonly title: string;
  readonly status: ConfinementCheckStatus;
  readonly detail: string;
  readonly fix?: string | undefined;
}

/** How one limit is enforced here; `by` is empty when nothing enforces it. */
export interface LimitEnforcement {
  readonly limit: keyof ConfinementLimits;
  readonly value: number;
  readonly by: readonly string[];
}

export interface ConfinementReport {
  readonly checks: readonly ConfinementCheck[];
  /** Found and answering `--version`. */
  readonly bwrap: { readonly path: string; readonly version: string } | undefined;
  readonly cgroups: CgroupDetection;
  readonly limits: readonly LimitEnforcement[];
}

export interface ConfinementProbeOptions {
  readonly host?: ProbeHost;
  readonly cgroupSource?: CgroupDetectionSource;
  /** The configured limits, for the "in force" line. Default: the defaults. */
  readonly limits?: ConfinementLimits;
  /**
   * The unprivileged host user a root gateway starts namespaces as (`sandbox.local.sandbox_uid`,
   * `sandbox_gid`). Default 65534. Ignored when not root: commands run as the gateway's user.
   */
  readonly owner?: Partial<SandboxOwner>;
}

/** Fixed system locations (as the launcher looks): never the caller's `PATH`. */
export const BWRAP_CANDIDATES: readonly string[] = [
  '/usr/bin/bwrap',
  '/bin/bwrap',
  '/usr/local/bin/bwrap',
];

const INSTALL_BWRAP =
  'install bubblewrap: sudo apt install bubblewrap (Debian, Ubuntu), sudo dnf install bubblewrap (Fedora, RHEL), apk add bubblewrap (Alpine)';

/** Bubblewrap's `--size` (a size-limited tmpfs) exists from 0.5.0 on. */
const SIZE_OPTION_VERSION: readonly [number, number] = [0, 5];

const STDERR_SHOWN = 300;

function said(stderr: string): string {
  const text = stderr.trim().replace(/\s+/g, ' ');
  return text === '' ? 'no message' : text.slice(0, STDERR_SHOWN);
}

async function findBwrap(host: ProbeHost): Promise<string | undefined> {
  for (const candidate of BWRAP_CANDIDATES) if (await host.executable(candidate)) return candidate;
  return undefined;
}

type Container = 'kubernetes' | 'docker' | 'podman' | 'container' | undefined;

async function containerKind(host: ProbeHost): Promise<Container> {
  if (
    (await host.readFile('/var/run/secrets/kubernetes.io/serviceaccount/namespace')) !== undefined
  )
    return 'kubernetes';
  if ((await host.readFile('/run/.containerenv')) !== undefined) return 'podman';
  if ((await host.readFile('/.dockerenv')) !== undefined) return 'docker';
  const initCgroup = (await host.readFile('/proc/1/cgroup')) ?? '';
  if (/kubepods/.test(initCgroup)) return 'kubernetes';
  if (/docker|containerd|lxc|libpod/.test(initCgroup)) return 'container';
  return undefined;
}

function sysctlValue(text: string | undefined): string | undefined {
  return text?.trim();
}

/**
 * Why `bwrap --unshare-user` failed, from the host's switches (checked in the order the kernel
 * applies them) and bubblewrap's words. Each answer names the one change that makes it work.
 */
async function diagnoseUserNamespaces(
  host: ProbeHost,
  stderr: string,
  unprivileged: boolean,
): Promise<{ detail: string; fix: string }> {
  const words = said(stderr);
  const max = sysctlValue(await host.readFile('/proc/sys/user/max_user_namespaces'));
  if (max === '0') {
    return {
      detail: `user namespaces are disabled (user.max_user_namespaces = 0); bwrap: ${words}`,
      fix: 'sudo sysctl -w user.max_user_namespaces=15000, and persist it in /etc/sysctl.d/',
    };
  }
  if (
    unprivileged &&
    sysctlValue(await host.readFile('/proc/sys/kernel/unprivileged_userns_clone')) === '0'
  ) {
    return {
      detail: `unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0); bwrap: ${words}`,
      fix: 'sudo sysctl -w kernel.unprivileged_userns_clone=1, and persist it in /etc/sysctl.d/',
    };
  }
  if (
    unprivileged &&
    sysctlValue(await host.readFile('/proc/sys/kernel/apparmor_restrict_unprivileged_userns')) ===
      '1'
  ) {
    return {
      detail: `AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later, kernel.apparmor_restrict_unprivileged_userns = 1); bwrap: ${words}`,
      fix:
        'give bwrap an AppArmor profile that allows user namespaces: write ' +
        '"abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }" ' +
        'to /etc/apparmor.d/bwrap and run sudo apparmor_parser -r /etc/apparmor.d/bwrap ' +
        '(or, for the whole machine, sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0)',
    };
  }
  const container = await containerKind(host);
  if (container && /not permitted|permission denied|no permissions/i.test(stderr)) {
    const fix =
      container === 'kubernetes'
        ? 'let the pod create user namespaces: securityContext.seccompProfile.type: Unconfined and appArmorProfile.type: Unconfined (or a profile allowing unshare/clone with CLONE_NEWUSER); or run sbx with a container provider'
        : container === 'podman'
          ? 'start the container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined (or --privileged)'
          : "start the container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined (Docker's default profiles refuse unshare; --privileged also works), or use the @sbx/aio provider instead";
    return {
      detail: `this ${container === 'container' ? '' : `${container} `}container's runtime refuses namespace creation (its seccomp or AppArmor profile); bwrap: ${words}`,
      fix,
    };
  }
  return {
    detail: `bwrap could not create a user namespace: ${words}`,
    fix: 'run bwrap --unshare-user --ro-bind / / true as the gateway user to see why; check dmesg for AppArmor or SELinux denials',
  };
}

async function bwrapCheck(
  host: ProbeHost,
): Promise<{ check: ConfinementCheck; bwrap: ConfinementReport['bwrap'] }> {
  const title = 'bubblewrap installed';
  const path = await findBwrap(host);
  if (!path) {
    return {
      check: {
        id: 'confinement.bwrap',
        title,
        status: 'fail',
        detail: `no bwrap at ${BWRAP_CANDIDATES.join(', ')}`,
        fix: INSTALL_BWRAP,
      },
      bwrap: undefined,
    };
  }
  const run = await host.run(path, ['--version']);
  const version = /bubblewrap\s+(\S+)/.exec(run.stdout)?.[1];
  if (run.status !== 0 || !version) {
    return {
      check: {
        id: 'confinement.bwrap',
        title,
        status: 'fail',
        detail: `${path} --version failed: ${run.error ?? said(run.stderr)}`,
        fix: `reinstall bubblewrap (${path} does not run)`,
      },
      bwrap: undefined,
    };
  }
  return {
    check: {
      id: 'confinement.bwrap',
      title,
      status: 'ok',
      detail: `bubblewrap ${version} at ${path}`,
    },
    bwrap: { path, version },
  };
}

/**
 * Tries what the provider will do: a root gateway creates its namespaces as an unprivileged host
 * user (so AppArmor's and the sysctl's restrictions on unprivileged user namespaces apply to it),
 * any other gateway as itself.
 */
async function usernsCheck(
  host: ProbeHost,
  bwrap: string | undefined,
  owner: SandboxOwner | undefined,
): Promise<ConfinementCheck> {
  const title = 'user namespaces usable';
  if (!bwrap) {
    return {
      id: 'confinement.userns',
      title,
      status: 'skip',
      detail: 'bubblewrap is not installed',
    };
  }
  const run = await host.run(bwrap, ['--unshare-user', '--ro-bind', '/', '/', 'true'], owner);
  const who = owner ? ` as uid ${owner.uid} (the sandbox user of a root gateway)` : '';
  if (run.status === 0) {
    return {
      id: 'confinement.userns',
      title,
      status: 'ok',
      detail: `bwrap --unshare-user ran${who}`,
    };
  }
  if (run.error) {
    return {
      id: 'confinement.userns',
      title,
      status: 'fail',
      detail: `bwrap --unshare-user did not finish${who}: ${run.error}`,
      fix: 'run bwrap --unshare-user --ro-bind / / true by hand to see where it hangs',
    };
  }
  const diagnosis = await diagnoseUserNamespaces(
    host,
    run.stderr,
    owner !== undefined || host.uid !== 0,
  );
  return {
    id: 'confinement.userns',
    title,
    status: 'fail',
    detail: diagnosis.detail + who,
    fix: diagnosis.fix,
  };
}

/** Actions the sandbox filter uses. */
const SECCOMP_ACTIONS = ['errno', 'allow'];

async function seccompCheck(host: ProbeHost): Promise<ConfinementCheck> {
  const title = 'seccomp filters available';
  const status = (await host.readFile('/proc/self/status')) ?? '';
  const mode = /^Seccomp:\s*(\d)/m.exec(status)?.[1];
  if (mode === undefined) {
    return {
      id: 'confinement.seccomp',
      title,
      status: 'fail',
      detail: 'this kernel has no seccomp (no Seccomp field in /proc/self/status)',
      fix: 'run on a kernel built with CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER (every distribution kernel is)',
    };
  }
  const actions = ((await host.readFile('/proc/sys/kernel/seccomp/actions_avail')) ?? '')
    .trim()
    .split(/\s+/);
  const missing = SECCOMP_ACTIONS.filter((a) => !actions.includes(a));
  if (missing.length > 0) {
    return {
      id: 'confinement.seccomp',
      title,
      status: 'fail',
      detail: `seccomp filter actions missing: ${missing.join(', ')} (actions_avail: ${actions.join(' ') || 'none'})`,
      fix: 'run on a kernel built with CONFIG_SECCOMP_FILTER (Linux 4.14 or later)',
    };
  }
  const already =
    mode === '2'
      ? '; this process already runs under a filter (a container profile), which the sandbox filter stacks on'
      : '';
  return {
    id: 'confinement.seccomp',
    title,
    status: 'ok',
    detail: `filter mode available (actions: ${actions.join(' ')})${already}`,
  };
}

function cgroupFix(detection: CgroupDetection, container: Container): string {
  const notes = detection.notes.join(' ');
  if (/other process/.test(notes) || /v2/.test(notes)) {
    return container
      ? 'give the container a writable cgroup of its own: docker run --cgroupns=private with a read-write /sys/fs/cgroup (e.g. --privileged, or -v /sys/fs/cgroup:/sys/fs/cgroup:rw), or run the gateway on the host under systemd'
      : 'run the gateway in a cgroup delegated to it: Delegate=yes in its systemd unit, or systemd-run --user --scope -p Delegate=yes <command>';
  }
  return 'run the gateway as root, or give its user a v1 hierarchy: sudo cgcreate -a $USER -t $USER -g pids,memory,cpu:/sbx';
}

function cgroupCheck(detection: CgroupDetection, container: Container): ConfinementCheck {
  const title = 'cgroups for sandbox limits';
  const layout = detection.layout;
  const notes = detection.notes.length > 0 ? ` (${detection.notes.join('; ')})` : '';
  if (!layout) {
    return {
      id: 'confinement.cgroups',
      title,
      status: 'fail',
      detail: `no usable cgroup: limits are per-process rlimits only${notes}`,
      fix: cgroupFix(detection, container),
    };
  }
  const where =
    layout.version === 'v2'
      ? `v2 ${layout.placement === 'own' ? 'delegated' : 'top'} at ${layout.dir}`
      : `v1 (${layout.hierarchies.map((h) => h.controller).join(', ')} writable)`;
  const missing = (['pids', 'memory'] as const).filter((c) => !layout.controllers.includes(c));
  if (missing.length > 0) {
    return {
      id: 'confinement.cgroups',
      title,
      status: 'fail',
      detail: `${where}: no ${missing.join(' or ')} controller${notes}`,
      fix: cgroupFix(detection, container),
    };
  }
  return {
    id: 'confinement.cgroups',
    title,
    status: 'ok',
    detail: `${where}: ${layout.controllers.join(', ')}${notes}`,
  };
}

function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && value % 1024 === 0 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value} ${units[unit]}`;
}

function versionAtLeast(version: string, [major, minor]: readonly [number, number]): boolean {
  const [a = 0, b = 0] = version.split('.').map(Number);
  return a > major || (a === major && b >= minor);
}

/** Which mechanism enforces each limit here, given what the probes found. */
export function limitsInForce(
  limits: ConfinementLimits,
  cgroups: CgroupDetection,
  bwrapVersion: string | undefined,
  prlimit: boolean,
): LimitEnforcement[] {
  const layout = cgroups.layout;
  const cg = (c: 'pids' | 'memory' | 'cpu'): string[] =>
    layout?.controllers.includes(c) ? [`cgroup ${layout.version} ${c}`] : [];
  return [
    {
      limit: 'pids',
      value: limits.pids,
      by: [...cg('pids'), ...(prlimit ? ['rlimit nproc (per user)'] : [])],
    },
    {
      limit: 'memoryBytes',
      value: limits.memoryBytes,
      by: [...cg('memory'), 'rlimit data (per process)'],
    },
    { limit: 'cpuMillicores', value: limits.cpuMillicores, by: cg('cpu') },
    {
      limit: 'tmpBytes',
      value: limits.tmpBytes,
      by: bwrapVersion && versionAtLeast(bwrapVersion, SIZE_OPTION_VERSION) ? ['tmpfs size'] : [],
    },
    { limit: 'fileSizeBytes', value: limits.fileSizeBytes, by: ['rlimit fsize (per process)'] },
  ];
}

const LIMIT_LABELS: Readonly<Record<keyof ConfinementLimits, string>> = {
  pids: 'pids',
  memoryBytes: 'memory',
  cpuMillicores: 'cpu',
  tmpBytes: '/tmp',
  fileSizeBytes: 'file size',
};

export function describeLimits(limits: readonly LimitEnforcement[]): string {
  return limits
    .map((l) => {
      const value =
        l.limit === 'pids'
          ? String(l.value)
          : l.limit === 'cpuMillicores'
            ? `${l.value / 1000} core${l.value === 1000 ? '' : 's'}`
            : formatBytes(l.value);
      return `${LIMIT_LABELS[l.limit]} ${value} (${l.by.length > 0 ? l.by.join(', ') : 'not enforced'})`;
    })
    .join('; ');
}

/**
 * What confinement this host allows and what is missing, each failure with its fix: bubblewrap,
 * user namespaces (tried, not inferred), seccomp, cgroups, and which limits are in force. Reads and
 * runs through `host` only; runs at most two short bwrap commands.
 */
export async function probeConfinementHost(
  options: ConfinementProbeOptions = {},
): Promise<ConfinementReport> {
  const host = options.host ?? realProbeHost;
  const limits = options.limits ?? DEFAULT_CONFINEMENT_LIMITS;
  if (host.platform !== 'linux') {
    const detail = `confined commands need Linux (this is ${host.platform}); a macOS Seatbelt backend is designed, not built`;
    return {
      checks: [{ id: 'confinement.bwrap', title: 'bubblewrap installed', status: 'skip', detail }],
      bwrap: undefined,
      cgroups: { layout: undefined, notes: [detail] },
      limits: [],
    };
  }
  const { check: bwrapRow, bwrap } = await bwrapCheck(host);
  const [userns, seccomp, cgroups, container, prlimit] = await Promise.all([
    usernsCheck(
      host,
      bwrap?.path,
      host.uid === 0
        ? {
            uid: options.owner?.uid ?? DEFAULT_SANDBOX_UID,
            gid: options.owner?.gid ?? DEFAULT_SANDBOX_GID,
          }
        : undefined,
    ),
    seccompCheck(host),
    detectCgroups(options.cgroupSource ?? hostCgroupSource),
    containerKind(host),
    (async () => {
      for (const c of PRLIMIT_CANDIDATES) if (await host.executable(c)) return true;
      return false;
    })(),
  ]);
  const enforced = limitsInForce(limits, cgroups, bwrap?.version, prlimit);
  return {
    checks: [
      bwrapRow,
      userns,
      seccomp,
      cgroupCheck(cgroups, container),
      {
        id: 'confinement.limits',
        title: 'limits in force',
        status: 'ok',
        detail: describeLimits(enforced),
      },
    ],
    bwrap,
    cgroups,
    limits: enforced,
  };
}
