import type { ConfigIssue } from '@sbx/core';

/**
 * What one sandbox container may use. Every limit is on by default: one agent's fork bomb or
 * memory leak must not take the Docker host down for every other tenant.
 */
export interface ContainerResources {
  /** Memory limit in MiB (swap disabled: the limit is the limit). */
  readonly memoryMb: number;
  /** CPUs (fractions allowed, e.g. 0.5). */
  readonly cpus: number;
  /** Most processes and threads at once (fork bombs stop here). */
  readonly pids: number;
  /**
   * Writable layer size in GiB. Only where the engine supports it (overlay2 on xfs with `pquota`,
   * or devicemapper/zfs/btrfs); elsewhere the create fails with the engine's message, so the
   * default is unset.
   */
  readonly diskGb?: number | undefined;
}

/**
 * The hardened default. Each item is checked against the stand-in image in the tests; for the
 * all-in-one image see the package README (what it was checked against, and the opt-outs).
 */
export interface ContainerSecurityProfile {
  /** `default`: the engine's default seccomp profile. `unconfined` opts out (see its risk). */
  readonly seccomp: 'default' | 'unconfined';
  /** Capabilities added back after `--cap-drop ALL`. */
  readonly capAdd: readonly string[];
  /** `no-new-privileges`: setuid binaries and file capabilities grant nothing. */
  readonly noNewPrivileges: boolean;
  /** Read-only root filesystem; the user-data mounts and `tmpfs` paths stay writable. */
  readonly readOnlyRoot: boolean;
  /** Paths given a tmpfs when the root is read-only. */
  readonly tmpfs: readonly string[];
  /** `--user` (e.g. `1000:1000`); unset keeps the image's user. */
  readonly user?: string | undefined;
}

export const DEFAULT_CONTAINER_RESOURCES: ContainerResources = {
  memoryMb: 4096,
  cpus: 2,
  pids: 1024,
};

/**
 * What the all-in-one image needs after `--cap-drop ALL`: its supervisor starts services as
 * other users (SETUID/SETGID), prepares their files (CHOWN, DAC_OVERRIDE, FOWNER, FSETID) and
 * stops them (KILL), and some listen on low ports (NET_BIND_SERVICE). Dropped from Docker's own
 * default set: NET_RAW (no raw sockets, so no ping), MKNOD, SETFCAP, SETPCAP, SYS_CHROOT,
 * AUDIT_WRITE.
 */
export const DEFAULT_CAP_ADD: readonly string[] = [
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'NET_BIND_SERVICE',
];

export const DEFAULT_SECURITY_PROFILE: ContainerSecurityProfile = {
  seccomp: 'default',
  capAdd: DEFAULT_CAP_ADD,
  noNewPrivileges: true,
  readOnlyRoot: false,
  tmpfs: ['/tmp', '/run', '/var/tmp'],
};

/** The HostConfig fields of a profile and limits (Docker Engine API names). */
export interface ProfileHostConfig {
  Memory: number;
  MemorySwap: number;
  NanoCpus: number;
  PidsLimit: number;
  CapDrop: string[];
  CapAdd: string[];
  SecurityOpt: string[];
  ReadonlyRootfs: boolean;
  Tmpfs?: Record<string, string>;
  StorageOpt?: Record<string, string>;
}

export function profileHostConfig(
  resources: ContainerResources,
  security: ContainerSecurityProfile,
): ProfileHostConfig {
  const memory = resources.memoryMb * 1024 * 1024;
  const securityOpt: string[] = [];
  if (security.noNewPrivileges) securityOpt.push('no-new-privileges:true');
  if (security.seccomp === 'unconfined') securityOpt.push('seccomp=unconfined');
  return {
    Memory: memory,
    // Equal to Memory: no swap on top, so the limit is what the agent gets.
    MemorySwap: memory,
    NanoCpus: Math.round(resources.cpus * 1e9),
    PidsLimit: resources.pids,
    CapDrop: ['ALL'],
    CapAdd: [...security.capAdd],
    SecurityOpt: securityOpt,
    ReadonlyRootfs: security.readOnlyRoot,
    ...(security.readOnlyRoot
      ? { Tmpfs: Object.fromEntries(security.tmpfs.map((p) => [p, 'rw,nosuid,nodev'])) }
      : {}),
    ...(resources.diskGb === undefined ? {} : { StorageOpt: { size: `${resources.diskGb}G` } }),
  };
}

const CAPABILITY = /^[A-Z_]+$/;

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Reads `sandbox.aio.limits` with every problem at its key path. */
export function readLimits(raw: unknown, issues: ConfigIssue[]): ContainerResources {
  if (raw === undefined || raw === null) return DEFAULT_CONTAINER_RESOURCES;
  const block = record(raw);
  const at = (key: string) => `sandbox.aio.limits.${key}`;
  if (!block) {
    issues.push({ path: 'sandbox.aio.limits', message: 'must be a mapping' });
    return DEFAULT_CONTAINER_RESOURCES;
  }
  for (const key of Object.keys(block)) {
    if (!['memory_mb', 'cpus', 'pids', 'disk_gb'].includes(key)) {
      issues.push({
        path: at(key),
        message: 'unknown key (known: memory_mb, cpus, pids, disk_gb)',
      });
    }
  }
  const number = (key: string, min: number, integer: boolean): number | undefined => {
    const v = block[key];
    if (v === undefined || v === null) return undefined;
    if (
      typeof v !== 'number' ||
      !Number.isFinite(v) ||
      v < min ||
      (integer && !Number.isInteger(v))
    ) {
      issues.push({
        path: at(key),
        message: `must be ${integer ? 'an integer' : 'a number'} >= ${min}`,
      });
      return undefined;
    }
    return v;
  };
  // Docker refuses a memory limit under 6 MiB; below ~64 MiB the image's own server cannot start.
  const memoryMb = number('memory_mb', 64, true);
  const cpus = number('cpus', 0.01, false);
  const pids = number('pids', 16, true);
  const diskGb = number('disk_gb', 1, true);
  return {
    memoryMb: memoryMb ?? DEFAULT_CONTAINER_RESOURCES.memoryMb,
    cpus: cpus ?? DEFAULT_CONTAINER_RESOURCES.cpus,
    pids: pids ?? DEFAULT_CONTAINER_RESOURCES.pids,
    ...(diskGb === undefined ? {} : { diskGb }),
  };
}

/** Reads `sandbox.aio.security` with every problem at its key path. */
export function readSecurity(raw: unknown, issues: ConfigIssue[]): ContainerSecurityProfile {
  if (raw === undefined || raw === null) return DEFAULT_SECURITY_PROFILE;
  const block = record(raw);
  const at = (key: string) => `sandbox.aio.security.${key}`;
  if (!block) {
    issues.push({ path: 'sandbox.aio.security', message: 'must be a mapping' });
    return DEFAULT_SECURITY_PROFILE;
  }
  const known = ['seccomp', 'cap_add', 'no_new_privileges', 'read_only_root', 'tmpfs', 'user'];
  for (const key of Object.keys(block)) {
    if (!known.includes(key)) {
      issues.push({ path: at(key), message: `unknown key (known: ${known.join(', ')})` });
    }
  }
  const out = { ...DEFAULT_SECURITY_PROFILE } as {
    -readonly [K in keyof ContainerSecurityProfile]: ContainerSecurityProfile[K];
  };
  if (block.seccomp !== undefined) {
    if (block.seccomp === 'default' || block.seccomp === 'unconfined') out.seccomp = block.seccomp;
    else issues.push({ path: at('seccomp'), message: "must be 'default' or 'unconfined'" });
  }
  const strings = (key: string, check: (s: string) => boolean, what: string) => {
    const v = block[key];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && check(x))) {
      issues.push({ path: at(key), message: `must be a list of ${what}` });
      return undefined;
    }
    return v as string[];
  };
  if (block.cap_add !== undefined) {
    const caps = strings('cap_add', (s) => CAPABILITY.test(s), 'capability names (e.g. NET_RAW)');
    if (caps) out.capAdd = caps;
  }
  if (block.tmpfs !== undefined) {
    const paths = strings('tmpfs', (s) => s.startsWith('/'), 'absolute paths');
    if (paths) out.tmpfs = paths;
  }
  for (const [key, field] of [
    ['no_new_privileges', 'noNewPrivileges'],
    ['read_only_root', 'readOnlyRoot'],
  ] as const) {
    const v = block[key];
    if (v === undefined) continue;
    if (typeof v === 'boolean') out[field] = v;
    else issues.push({ path: at(key), message: 'must be true or false' });
  }
  if (block.user !== undefined) {
    if (typeof block.user === 'string' && /^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/.test(block.user)) {
      out.user = block.user;
    } else issues.push({ path: at('user'), message: "must be a user or 'uid:gid'" });
  }
  return out;
}
