import { constants as fsConstants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';

/** The controllers a sandbox's limits use. */
export type CgroupController = 'pids' | 'memory' | 'cpu';

export const CGROUP_CONTROLLERS: readonly CgroupController[] = ['pids', 'memory', 'cpu'];

/** The unified hierarchy: one directory, the gateway's own cgroup, sandboxes below it. */
export interface CgroupV2Layout {
  readonly version: 'v2';
  /** Where sandbox groups go below: the gateway's own cgroup, or the top of the hierarchy. */
  readonly dir: string;
  /** `own`: a delegated subtree (the usual case); `top`: the hierarchy's top as mounted. */
  readonly placement: 'own' | 'top';
  readonly controllers: readonly CgroupController[];
  /** `cgroup.kill` exists (Linux 5.14+): a group ends in one write. */
  readonly kill: boolean;
  /**
   * The gateway's cgroup holds the gateway itself: before controllers can be enabled below it
   * (the no-internal-processes rule), the gateway moves into a leaf of its own.
   */
  readonly gatewayMustMove: boolean;
}

/** One v1 hierarchy the gateway can create groups in. */
export interface CgroupV1Hierarchy {
  readonly controller: CgroupController | 'freezer';
  /** The top of the hierarchy as this process sees it (its mount point). */
  readonly dir: string;
}

export interface CgroupV1Layout {
  readonly version: 'v1';
  readonly hierarchies: readonly CgroupV1Hierarchy[];
  readonly controllers: readonly CgroupController[];
  /** A writable freezer hierarchy: a group is frozen before its processes are killed. */
  readonly freezer: boolean;
}

export type CgroupLayout = CgroupV2Layout | CgroupV1Layout;

export interface CgroupDetection {
  /** Where sandbox groups go; undefined when no controller is usable (rlimits only). */
  readonly layout: CgroupLayout | undefined;
  /** Why a controller (or a whole hierarchy) is not usable: one sentence each. */
  readonly notes: readonly string[];
}

/** How detection reads the host; the default reads this process's `/proc` and the cgroup mounts. */
export interface CgroupDetectionSource {
  readFile(file: string): Promise<string | undefined>;
  writable(file: string): Promise<boolean>;
  readonly pid: number;
}

export const hostCgroupSource: CgroupDetectionSource = {
  async readFile(file) {
    try {
      return await readFile(file, 'utf8');
    } catch {
      return undefined;
    }
  },
  async writable(file) {
    try {
      await access(file, fsConstants.W_OK);
      return true;
    } catch {
      return false;
    }
  },
  pid: process.pid,
};

interface MountEntry {
  readonly root: string;
  readonly mountPoint: string;
  readonly readOnly: boolean;
  readonly fsType: string;
  readonly superOptions: readonly string[];
}

/** `/proc/self/mountinfo` octal escapes (`\040` for a space). */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(parseInt(octal, 8)),
  );
}

export function parseMountinfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (dash < 6 || fields.length < dash + 4) continue;
    const root = fields[3];
    const mountPoint = fields[4];
    const options = fields[5];
    const fsType = fields[dash + 1];
    const superOptions = fields[dash + 3];
    if (!root || !mountPoint || !options || !fsType || superOptions === undefined) continue;
    entries.push({
      root: unescapeMount(root),
      mountPoint: unescapeMount(mountPoint),
      readOnly: options.split(',').includes('ro'),
      fsType,
      superOptions: superOptions.split(','),
    });
  }
  return entries;
}

/** `/proc/self/cgroup`: hierarchy id, controllers (empty for v2), path. */
export function parseProcCgroup(text: string): { controllers: readonly string[]; path: string }[] {
  const out: { controllers: readonly string[]; path: string }[] = [];
  for (const line of text.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const list = line.slice(first + 1, second);
    out.push({ controllers: list === '' ? [] : list.split(','), path: line.slice(second + 1) });
  }
  return out;
}

/**
 * The directory of `cgroupPath` in a mount of the hierarchy, or undefined when the mount does not
 * show it (a container that bind-mounted a subtree the process is not in).
 */
function dirIn(mount: MountEntry, cgroupPath: string): string | undefined {
  if (!cgroupPath.startsWith('/')) return undefined;
  const rel = path.posix.relative(mount.root, cgroupPath);
  if (rel.startsWith('..') || path.posix.isAbsolute(rel)) return undefined;
  return rel === '' ? mount.mountPoint : path.posix.join(mount.mountPoint, rel);
}

function words(text: string | undefined): string[] {
  return (text ?? '').trim().split(/\s+/).filter(Boolean);
}

/**
 * One v2 directory sandbox groups could go below: its controllers, whether this user can write
 * it, and whether controllers can be enabled below it (the no-internal-processes rule: the real
 * root is exempt; elsewhere the directory must hold no process, or only the gateway, which then
 * moves into a leaf; `mayMove` false refuses that).
 */
async function v2Candidate(
  source: CgroupDetectionSource,
  dir: string,
  readOnly: boolean,
  placement: 'own' | 'top',
  notes: string[],
): Promise<CgroupV2Layout | undefined> {
  const available = words(await source.readFile(path.join(dir, 'cgroup.controllers')));
  const controllers = CGROUP_CONTROLLERS.filter((c) => available.includes(c));
  if (controllers.length === 0) {
    notes.push(`cgroup v2: no pids, memory or cpu controller is available in ${dir}`);
    return undefined;
  }
  if (
    readOnly ||
    !(await source.writable(dir)) ||
    !(await source.writable(path.join(dir, 'cgroup.subtree_control')))
  ) {
    notes.push(`cgroup v2: ${dir} is not writable by this user`);
    return undefined;
  }
  const enabled = words(await source.readFile(path.join(dir, 'cgroup.subtree_control')));
  // The real root cgroup has no cgroup.type and is exempt from the no-internal-processes rule.
  const isRoot = (await source.readFile(path.join(dir, 'cgroup.type'))) === undefined;
  let gatewayMustMove = false;
  if (!isRoot && !controllers.every((c) => enabled.includes(c))) {
    const procs = words(await source.readFile(path.join(dir, 'cgroup.procs')));
    const others = procs.filter((p) => Number(p) !== source.pid);
    if (placement === 'top' || others.length > 0) {
      notes.push(
        `cgroup v2: ${dir} holds ${others.length} other process(es), so no controller can be enabled below it; give the gateway a cgroup of its own (systemd: Delegate=yes)`,
      );
      return undefined;
    }
    gatewayMustMove = procs.length > 0;
  }
  // Write-only (reading it fails): looked up by whether it can be written.
  const kill = await source.writable(path.join(dir, 'cgroup.kill'));
  return { version: 'v2', dir, placement, controllers, kill, gatewayMustMove };
}

/**
 * The gateway's own cgroup when it is a delegated subtree; else the top of the hierarchy as
 * mounted, where this user may create groups with controllers (root on a host or VM whose service
 * cgroup is shared, as on CI runners; inside a container with its own cgroup namespace, the
 * container's cgroup).
 */
async function detectV2(
  source: CgroupDetectionSource,
  mounts: readonly MountEntry[],
  own: readonly { controllers: readonly string[]; path: string }[],
  notes: string[],
): Promise<CgroupV2Layout | undefined> {
  const mount = mounts.find((m) => m.fsType === 'cgroup2');
  const entry = own.find((e) => e.controllers.length === 0);
  if (!mount || !entry) return undefined;
  const dir = dirIn(mount, entry.path);
  if (!dir) {
    notes.push(
      `cgroup v2: this process's cgroup ${entry.path} is not visible under ${mount.mountPoint}`,
    );
  } else {
    const ownLayout = await v2Candidate(source, dir, mount.readOnly, 'own', notes);
    if (ownLayout || dir === mount.mountPoint) return ownLayout;
  }
  return v2Candidate(source, mount.mountPoint, mount.readOnly, 'top', notes);
}

/**
 * v1 groups go below the top of each mounted hierarchy: inside a container that is the container's
 * own subtree (the mount's root), on a host the hierarchy's root. Nothing is created inside the
 * cgroup this process was started in, which belongs to whatever started it.
 */
async function detectV1(
  source: CgroupDetectionSource,
  mounts: readonly MountEntry[],
  notes: string[],
): Promise<CgroupV1Layout | undefined> {
  const hierarchies: CgroupV1Hierarchy[] = [];
  for (const controller of [...CGROUP_CONTROLLERS, 'freezer'] as const) {
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes(controller));
    if (!mount) continue;
    const dir = mount.mountPoint;
    if (mount.readOnly || !(await source.writable(path.join(dir, 'cgroup.procs')))) {
      notes.push(`cgroup v1 ${controller}: ${dir} is not writable by this user`);
      continue;
    }
    hierarchies.push({ controller, dir });
  }
  const controllers = CGROUP_CONTROLLERS.filter((c) => hierarchies.some((h) => h.controller === c));
  if (controllers.length === 0) return undefined;
  return {
    version: 'v1',
    hierarchies,
    controllers,
    freezer: hierarchies.some((h) => h.controller === 'freezer'),
  };
}

/**
 * Which cgroup controllers this process can give its sandboxes, and where: its own v2 cgroup when
 * that is a delegated subtree, else the writable v1 hierarchies, else none. Reads only; nothing
 * is created until the first sandbox group.
 */
export async function detectCgroups(
  source: CgroupDetectionSource = hostCgroupSource,
): Promise<CgroupDetection> {
  const notes: string[] = [];
  const mountinfo = await source.readFile('/proc/self/mountinfo');
  const procCgroup = await source.readFile('/proc/self/cgroup');
  if (mountinfo === undefined || procCgroup === undefined) {
    return { layout: undefined, notes: ['no /proc/self/cgroup: this host has no cgroups'] };
  }
  const mounts = parseMountinfo(mountinfo);
  const own = parseProcCgroup(procCgroup);
  if (!mounts.some((m) => m.fsType === 'cgroup' || m.fsType === 'cgroup2')) {
    return { layout: undefined, notes: ['no cgroup filesystem is mounted'] };
  }
  const v2 = await detectV2(source, mounts, own, notes);
  if (v2) return { layout: v2, notes };
  const v1 = await detectV1(source, mounts, notes);
  return { layout: v1, notes };
}
