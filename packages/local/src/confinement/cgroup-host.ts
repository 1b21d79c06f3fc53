import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, type Logger } from '@sbx/core';
import {
  detectCgroups,
  type CgroupDetection,
  type CgroupLayout,
  type CgroupV2Layout,
} from './cgroup-detect.js';
import { killCgroupMembers } from './cgroup-kill.js';
import {
  childDirs,
  ConfinementCgroupError,
  groupMembers,
  pauseRound,
  readControl,
  removeGroupDir,
  writeControl,
} from './cgroup-files.js';
import type { ConfinementLimits } from './cgroup-limits.js';
import {
  CGROUP_PARENT,
  currentGatewayIdentity,
  gatewayIsGone,
  gatewaySegment,
  isSandboxSegment,
  parseGatewaySegment,
  sandboxCgroupSegment,
  type GatewayIdentity,
} from './cgroup-names.js';
import { createGroup, type SandboxCgroup } from './cgroup-sandbox-group.js';

/** The v2 leaf the gateway moves itself into when its own cgroup must hold no process. */
const GATEWAY_LEAF = 'gateway';

/** This gateway's cgroups: where its sandboxes' groups go, made and swept once. */
export interface CgroupHost {
  readonly detection: CgroupDetection;
  /** Undefined: no controller is usable here (limits are rlimits only). */
  readonly layout: CgroupLayout | undefined;
  /**
   * A group for one sandbox, limits written.
   *
   * @throws ConfinementCgroupError when the host has no usable cgroups or the kernel refuses
   * @throws InvalidArgumentError for a name that is not a bounded non-empty string
   */
  createSandboxCgroup(name: string, limits: ConfinementLimits): Promise<SandboxCgroup>;
  /** Destroys every group this host made that is still there, and its own directories. */
  close(): Promise<void>;
}

export interface CgroupHostOptions {
  readonly log: Logger;
  /** Default: `detectCgroups()` of this process. */
  readonly detection?: CgroupDetection;
  /** Default: this process (tests name another to sweep). */
  readonly identity?: GatewayIdentity;
}

function hierarchyDirs(layout: CgroupLayout): string[] {
  return layout.version === 'v2' ? [layout.dir] : layout.hierarchies.map((h) => h.dir);
}

/**
 * Ends and removes the groups of gateways that are gone (a SIGKILLed gateway cannot clean up):
 * whatever their sandboxes left running is killed. Gateways of another pid namespace are left
 * alone: they cannot be judged from here.
 */
export async function sweepStaleGateways(
  layout: CgroupLayout,
  self: GatewayIdentity,
  log: Logger,
): Promise<number> {
  let swept = 0;
  for (const top of hierarchyDirs(layout)) {
    const parent = path.join(top, CGROUP_PARENT);
    for (const entry of await childDirs(parent)) {
      const id = parseGatewaySegment(entry);
      if (!id || !(await gatewayIsGone(id, self))) continue;
      const gatewayDir = path.join(parent, entry);
      try {
        for (const child of await childDirs(gatewayDir)) {
          if (!isSandboxSegment(child) && child !== GATEWAY_LEAF) continue;
          const dir = path.join(gatewayDir, child);
          const left = await killCgroupMembers({
            members: () => groupMembers(dir),
            kill: (pid) => process.kill(pid, 'SIGKILL'),
            pause: pauseRound,
            maxRounds: 500,
          });
          if (left.length > 0)
            throw new ConfinementCgroupError(`${dir} keeps ${left.length} process(es)`);
          await removeGroupDir(dir);
        }
        await removeGroupDir(gatewayDir);
        swept++;
        log.warn('removed the cgroup of a gateway that is gone, and ended its processes', {
          dir: gatewayDir,
        });
      } catch (err) {
        log.error('cannot remove the cgroup of a gateway that is gone', {
          dir: gatewayDir,
          error: errorMessage(err),
        });
      }
    }
  }
  return swept;
}

async function mkdirOnce(dir: string): Promise<void> {
  try {
    await mkdir(dir);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'EEXIST') return;
    throw new ConfinementCgroupError(`Cannot create cgroup ${dir}`, { cause: err });
  }
}

async function enableControllers(dir: string, layout: CgroupV2Layout): Promise<void> {
  const enabled = ((await readControl(path.join(dir, 'cgroup.subtree_control'))) ?? '').split(
    /\s+/,
  );
  const missing = layout.controllers.filter((c) => !enabled.includes(c));
  if (missing.length === 0) return;
  await writeControl(
    path.join(dir, 'cgroup.subtree_control'),
    missing.map((c) => `+${c}`).join(' '),
  );
}

/**
 * v2: `<own>/sbx/<gateway>/` with the controllers enabled at each level. When the gateway's own
 * cgroup holds the gateway (a delegated service cgroup), the gateway first moves into
 * `<gateway>/gateway`, a leaf, as the no-internal-processes rule requires.
 */
async function prepareV2(layout: CgroupV2Layout, gatewayDir: string): Promise<void> {
  const parent = path.dirname(gatewayDir);
  await mkdirOnce(parent);
  await mkdirOnce(gatewayDir);
  if (layout.gatewayMustMove) {
    const leaf = path.join(gatewayDir, GATEWAY_LEAF);
    await mkdirOnce(leaf);
    await writeControl(path.join(leaf, 'cgroup.procs'), String(process.pid));
  }
  await enableControllers(layout.dir, layout);
  await enableControllers(parent, layout);
  await enableControllers(gatewayDir, layout);
}

/**
 * Opens this gateway's cgroups: detects what the host offers, sweeps the groups of gone gateways,
 * and makes the gateway's own parent directories. Logs once what is in force and why not more.
 */
export async function openCgroupHost(options: CgroupHostOptions): Promise<CgroupHost> {
  const { log } = options;
  const detection = options.detection ?? (await detectCgroups());
  let layout = detection.layout;
  const groups = new Set<SandboxCgroup>();
  if (!layout) {
    log.info('no usable cgroup here: sandbox limits are rlimits only', { why: detection.notes });
  }
  let segment = '';
  const parentOf = (top: string): string => path.join(top, CGROUP_PARENT, segment);
  if (layout) {
    try {
      const identity = options.identity ?? (await currentGatewayIdentity());
      segment = gatewaySegment(identity);
      await sweepStaleGateways(layout, identity, log);
      if (layout.version === 'v2') await prepareV2(layout, parentOf(layout.dir));
      else {
        for (const top of hierarchyDirs(layout)) {
          await mkdirOnce(path.join(top, CGROUP_PARENT));
          await mkdirOnce(parentOf(top));
        }
      }
      log.info('sandbox cgroups', {
        version: layout.version,
        controllers: layout.controllers,
        notes: detection.notes,
      });
    } catch (err) {
      log.error('cannot set up sandbox cgroups: sandbox limits are rlimits only', {
        error: errorMessage(err),
      });
      layout = undefined;
    }
  }
  const usable = layout;
  return {
    detection,
    layout: usable,
    async createSandboxCgroup(name, limits) {
      const sandboxSegment = sandboxCgroupSegment(name);
      if (!usable) {
        throw new ConfinementCgroupError('This host offers no usable cgroup for sandbox limits', {
          details: { why: detection.notes.join('; ') },
        });
      }
      const group = await createGroup({
        layout: usable,
        parentOf,
        segment: sandboxSegment,
        name,
        limits,
        log,
        mkdir: async (dir) => {
          try {
            await mkdir(dir);
          } catch (err) {
            throw new ConfinementCgroupError(
              (err as { code?: unknown }).code === 'EEXIST'
                ? `A cgroup for sandbox ${name} exists already: destroy it first`
                : `Cannot create the cgroup of sandbox ${name}`,
              { cause: err },
            );
          }
        },
      });
      groups.add(group);
      const destroy = group.destroy.bind(group);
      return {
        ...group,
        async destroy() {
          await destroy();
          groups.delete(group);
        },
      };
    },
    async close() {
      const failures: unknown[] = [];
      for (const group of [...groups]) {
        try {
          await group.destroy();
          groups.delete(group);
        } catch (err) {
          failures.push(err);
        }
      }
      if (usable && !(usable.version === 'v2' && usable.gatewayMustMove)) {
        for (const top of hierarchyDirs(usable)) {
          await removeGroupDir(parentOf(top)).catch((err: unknown) => failures.push(err));
        }
      }
      if (failures.length > 0) {
        throw new ConfinementCgroupError(
          `${failures.length} sandbox cgroup(s) could not be removed`,
          {
            cause: failures[0],
          },
        );
      }
    },
  };
}

let shared: Promise<CgroupHost> | undefined;

/** The process-wide host (one gateway, one set of parent directories). */
export function sharedCgroupHost(log: Logger): Promise<CgroupHost> {
  shared ??= openCgroupHost({ log });
  return shared;
}

/**
 * A sandbox's group from the process-wide host; undefined when the host offers no usable cgroup
 * (said once in the log when the host was opened; the rlimits still apply).
 */
export async function createSandboxCgroup(options: {
  readonly name: string;
  readonly limits: ConfinementLimits;
  readonly log: Logger;
}): Promise<SandboxCgroup | undefined> {
  const host = await sharedCgroupHost(options.log);
  if (!host.layout) return undefined;
  return host.createSandboxCgroup(options.name, options.limits);
}
