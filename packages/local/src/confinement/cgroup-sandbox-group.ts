import path from 'node:path';
import { errorMessage, type Logger } from '@sbx/core';
import type { CgroupController, CgroupLayout } from './cgroup-detect.js';
import { isForeignPid, killCgroupMembers } from './cgroup-kill.js';
import {
  ConfinementCgroupError,
  controlExists,
  groupMembers,
  pauseRound,
  readControl,
  removeGroupDir,
  writeControl,
} from './cgroup-files.js';
import type { ConfinementLimits } from './cgroup-limits.js';

/** What a sandbox's cgroup enforces: only the limits written to a controller are present. */
export interface CgroupLimitsInForce {
  readonly pids?: number;
  readonly memoryBytes?: number;
  /** Swap counts against `memoryBytes` (v2 `memory.swap.max` 0, v1 `memory.memsw`). */
  readonly swapLimited?: boolean;
  readonly cpuMillicores?: number;
}

export interface CgroupMemoryEvents {
  /** Processes the kernel's OOM killer killed in the group. */
  readonly oomKills: number;
  /** Times the group reached its limit (v2 `max`, v1 `memory.failcnt`); not every one kills. */
  readonly limitHits: number;
}

/** One sandbox's group, in every hierarchy the host offers. */
export interface SandboxCgroup {
  /** The name it was created for (never used in a path as written). */
  readonly name: string;
  readonly version: 'v1' | 'v2';
  /** The group's directory in each hierarchy. */
  readonly dirs: readonly string[];
  readonly limitsInForce: CgroupLimitsInForce;
  /**
   * Moves a process (all its threads) into the group. Add it before it forks: children start in
   * their parent's group, so everything it starts afterwards is counted and ended with it.
   */
  addPid(pid: number): Promise<void>;
  /** The processes in the group now. */
  members(): Promise<number[]>;
  /** Undefined when the memory controller is not in force. */
  memoryEvents(): Promise<CgroupMemoryEvents | undefined>;
  /** The kernel killed a process of the group for its memory limit. */
  wasOomKilled(): Promise<boolean>;
  /**
   * Kills every process in the group (whatever it did to its session, process group or
   * environment) and removes the group. Idempotent.
   *
   * @throws ConfinementCgroupError when processes are still there after a bounded wait
   */
  destroy(): Promise<void>;
}

/** Rounds of the kill loop (each a SIGKILL of every member, then a pause). */
const KILL_ROUNDS = 500;
/** Rounds of waiting for a freeze to take effect before killing regardless. */
const FREEZE_ROUNDS = 100;

const PERIOD_US = 100_000;

function cpuQuotaUs(millicores: number): number {
  return Math.max(1000, Math.round((millicores * PERIOD_US) / 1000));
}

interface GroupDir {
  readonly controller: CgroupController | 'freezer' | 'unified';
  readonly dir: string;
}

function numberField(text: string | undefined, key: string): number {
  if (text === undefined) return 0;
  const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return match?.[1] ? Number(match[1]) : 0;
}

async function writeLimitsV1(
  groups: readonly GroupDir[],
  limits: ConfinementLimits,
): Promise<CgroupLimitsInForce> {
  const inForce: { -readonly [K in keyof CgroupLimitsInForce]: CgroupLimitsInForce[K] } = {};
  for (const { controller, dir } of groups) {
    if (controller === 'pids') {
      await writeControl(path.join(dir, 'pids.max'), String(limits.pids));
      inForce.pids = limits.pids;
    } else if (controller === 'memory') {
      await writeControl(path.join(dir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      inForce.memoryBytes = limits.memoryBytes;
      // memsw must stay >= the memory limit, so it is written second. Without swap accounting
      // there is no such file, and memory that swaps out escapes the limit.
      const memsw = path.join(dir, 'memory.memsw.limit_in_bytes');
      inForce.swapLimited = await controlExists(memsw);
      if (inForce.swapLimited) await writeControl(memsw, String(limits.memoryBytes));
    } else if (controller === 'cpu') {
      await writeControl(path.join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
      await writeControl(
        path.join(dir, 'cpu.cfs_quota_us'),
        String(cpuQuotaUs(limits.cpuMillicores)),
      );
      inForce.cpuMillicores = limits.cpuMillicores;
    }
  }
  return inForce;
}

async function writeLimitsV2(
  dir: string,
  controllers: readonly CgroupController[],
  limits: ConfinementLimits,
): Promise<CgroupLimitsInForce> {
  const inForce: { -readonly [K in keyof CgroupLimitsInForce]: CgroupLimitsInForce[K] } = {};
  if (controllers.includes('pids')) {
    await writeControl(path.join(dir, 'pids.max'), String(limits.pids));
    inForce.pids = limits.pids;
  }
  if (controllers.includes('memory')) {
    await writeControl(path.join(dir, 'memory.max'), String(limits.memoryBytes));
    inForce.memoryBytes = limits.memoryBytes;
    const swap = path.join(dir, 'memory.swap.max');
    inForce.swapLimited = await controlExists(swap);
    if (inForce.swapLimited) await writeControl(swap, '0');
  }
  if (controllers.includes('cpu')) {
    await writeControl(
      path.join(dir, 'cpu.max'),
      `${cpuQuotaUs(limits.cpuMillicores)} ${PERIOD_US}`,
    );
    inForce.cpuMillicores = limits.cpuMillicores;
  }
  return inForce;
}

async function unionMembers(groups: readonly GroupDir[]): Promise<number[]> {
  const all = new Set<number>();
  for (const g of groups) for (const pid of await groupMembers(g.dir)) all.add(pid);
  return [...all];
}

function sigkill(pid: number): void {
  process.kill(pid, 'SIGKILL');
}

/** Freezes (so nothing forks while the members are read and killed), kills, thaws. */
async function freezeAndKill(
  freeze: () => Promise<void>,
  frozen: () => Promise<boolean>,
  thaw: () => Promise<void>,
  groups: readonly GroupDir[],
  log: Logger,
): Promise<void> {
  await freeze();
  try {
    let done = false;
    for (let round = 0; round < FREEZE_ROUNDS && !done; round++) {
      done = await frozen();
      if (!done) await pauseRound();
    }
    if (!done) log.warn('cgroup did not freeze in time; killing its processes unfrozen');
    for (const pid of await unionMembers(groups)) {
      try {
        sigkill(pid);
      } catch (err) {
        if ((err as { code?: unknown }).code !== 'ESRCH') throw err;
      }
    }
  } finally {
    // A frozen task receives SIGKILL when it thaws; one left frozen would never exit.
    await thaw();
  }
}

/**
 * Creates a sandbox's group directories (`<parent>/<segment>` in each hierarchy), writes its
 * limits, and returns its handle. On failure nothing it created is left behind.
 */
export async function createGroup(options: {
  readonly layout: CgroupLayout;
  /** Per hierarchy directory of the layout, the gateway's parent directory in it. */
  readonly parentOf: (hierarchyDir: string) => string;
  readonly segment: string;
  readonly name: string;
  readonly limits: ConfinementLimits;
  readonly log: Logger;
  readonly mkdir: (dir: string) => Promise<void>;
}): Promise<SandboxCgroup> {
  const { layout, segment, name, limits, log } = options;
  const groups: GroupDir[] =
    layout.version === 'v2'
      ? [{ controller: 'unified', dir: path.join(options.parentOf(layout.dir), segment) }]
      : layout.hierarchies.map((h) => ({
          controller: h.controller,
          dir: path.join(options.parentOf(h.dir), segment),
        }));
  const made: string[] = [];
  let limitsInForce: CgroupLimitsInForce;
  try {
    for (const g of groups) {
      await options.mkdir(g.dir);
      made.push(g.dir);
    }
    limitsInForce =
      layout.version === 'v2'
        ? await writeLimitsV2(groups[0]?.dir ?? '', layout.controllers, limits)
        : await writeLimitsV1(groups, limits);
  } catch (err) {
    for (const dir of made.reverse()) {
      await removeGroupDir(dir).catch((e: unknown) =>
        log.error('cannot remove a half-made sandbox cgroup', { dir, error: String(e) }),
      );
    }
    throw err;
  }

  const freezerDir = groups.find((g) => g.controller === 'freezer')?.dir;
  const unifiedDir = layout.version === 'v2' ? groups[0]?.dir : undefined;
  const memoryDir = layout.controllers.includes('memory')
    ? (groups.find((g) => g.controller === 'memory' || g.controller === 'unified')?.dir ??
      undefined)
    : undefined;
  let destroyed: Promise<void> | undefined;
  let closed = false;

  const memoryEvents = async (): Promise<CgroupMemoryEvents | undefined> => {
    if (!memoryDir) return undefined;
    if (layout.version === 'v2') {
      const events = await readControl(path.join(memoryDir, 'memory.events'));
      return { oomKills: numberField(events, 'oom_kill'), limitHits: numberField(events, 'max') };
    }
    const control = await readControl(path.join(memoryDir, 'memory.oom_control'));
    const failcnt = Number((await readControl(path.join(memoryDir, 'memory.failcnt'))) ?? 0);
    return { oomKills: numberField(control, 'oom_kill'), limitHits: failcnt };
  };

  /** The one-step end: `cgroup.kill`, else freeze, kill, thaw. */
  const stopAll = async (): Promise<void> => {
    if (unifiedDir && (await controlExists(path.join(unifiedDir, 'cgroup.kill')))) {
      await writeControl(path.join(unifiedDir, 'cgroup.kill'), '1');
    } else if (unifiedDir) {
      const file = path.join(unifiedDir, 'cgroup.freeze');
      await freezeAndKill(
        () => writeControl(file, '1'),
        async () =>
          numberField(await readControl(path.join(unifiedDir, 'cgroup.events')), 'frozen') === 1,
        () => writeControl(file, '0'),
        groups,
        log,
      );
    } else if (freezerDir) {
      const file = path.join(freezerDir, 'freezer.state');
      await freezeAndKill(
        () => writeControl(file, 'FROZEN'),
        async () => ((await readControl(file)) ?? '').trim() === 'FROZEN',
        () => writeControl(file, 'THAWED'),
        groups,
        log,
      );
    }
  };

  const destroy = async (): Promise<void> => {
    try {
      await stopAll();
    } catch (err) {
      // The kill rounds below still end every member, one round at a time.
      log.error('sandbox cgroup could not be stopped at once; killing its processes one by one', {
        name,
        error: errorMessage(err),
      });
    }
    const left = await killCgroupMembers({
      members: () => unionMembers(groups),
      kill: sigkill,
      pause: pauseRound,
      maxRounds: KILL_ROUNDS,
    });
    if (left.length > 0) {
      log.error('sandbox cgroup still has processes after the kill rounds', {
        name,
        pids: left.slice(0, 20),
      });
      throw new ConfinementCgroupError(
        `Sandbox cgroup of ${name} still has ${left.length} process(es) after being killed`,
      );
    }
    for (const g of [...groups].reverse()) await removeGroupDir(g.dir);
  };

  return {
    name,
    version: layout.version,
    dirs: groups.map((g) => g.dir),
    limitsInForce,
    async addPid(pid) {
      if (!isForeignPid(pid, process.pid)) {
        throw new ConfinementCgroupError(
          `Refusing to move pid ${String(pid)} into a sandbox cgroup`,
        );
      }
      if (closed) throw new ConfinementCgroupError(`Sandbox cgroup of ${name} is destroyed`);
      for (const g of groups) await writeControl(path.join(g.dir, 'cgroup.procs'), String(pid));
    },
    members: () => unionMembers(groups),
    memoryEvents,
    async wasOomKilled() {
      return ((await memoryEvents())?.oomKills ?? 0) > 0;
    },
    destroy() {
      // A second call waits for the first; a failed one can be retried.
      closed = true;
      destroyed ??= destroy().catch((err: unknown) => {
        destroyed = undefined;
        throw err;
      });
      return destroyed;
    },
  };
}
