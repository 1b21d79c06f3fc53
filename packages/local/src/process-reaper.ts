import { readFile, readdir } from 'node:fs/promises';
import type { Logger } from '@sbx/core';
import { isZombie, readProcStat } from './proc-stat.js';

/**
 * The environment variable every host command of a local sandbox carries. A process group is not
 * enough to find what a sandbox started: `setsid`, a double fork or `nohup … &` leave the group,
 * but they inherit the environment. And the environment is not enough either: `env -i` or
 * `exec env -u …` drop it, but stay in the command's session. So the reaper takes both (see
 * `ReapTarget`); a process that both leaves the session and clears its environment is out of its
 * reach (documented in the security model: a PID namespace per thread is the complete answer).
 */
export const SANDBOX_PROCESS_MARKER = 'SBX_SANDBOX_PROCESS_TAG';
/** The same for the provider instance: what its `shutdown()` reaps, evicted sandboxes included. */
export const PROVIDER_PROCESS_MARKER = 'SBX_PROVIDER_PROCESS_TAG';

const MAX_ROUNDS = 5;

/** What to reap. */
export interface ReapTarget {
  /**
   * Sessions sbx started, by session id (the pid of the command's shell, which leads its own
   * session and process group), each with its leader's start time. A session id is a pid: once
   * every process of the session is gone, the kernel may hand the number to an unrelated
   * process. So a session counts as ours only while its leader is the process that was started
   * (same start time), or gone; sbx forgets a session as soon as it sees its group empty.
   */
  readonly sessions?: ReadonlyMap<number, string>;
  /** An environment entry (`name=value`) that every process to reap carries. */
  readonly marker?: { readonly name: string; readonly value: string };
}

/** Pids (other than this process) whose environment holds `name=value`, read from `/proc`. */
export async function markedProcesses(name: string, value: string): Promise<number[]> {
  return findTargets({ marker: { name, value } });
}

function environHas(environ: Buffer, needle: Buffer): boolean {
  // Each entry is `NAME=value\0`; the first one has no leading NUL.
  return (
    environ.subarray(0, needle.length).equals(needle) ||
    environ.includes(Buffer.concat([Buffer.from([0]), needle]))
  );
}

/** Live processes (not this one, not zombies) in one of the target's sessions or carrying its marker. */
async function findTargets(target: ReapTarget): Promise<number[]> {
  if (process.platform !== 'linux') return [];
  const needle = target.marker
    ? Buffer.from(`${target.marker.name}=${target.marker.value}\0`)
    : undefined;
  const sessions = target.sessions;
  const verdicts = new Map<number, Promise<boolean>>();
  // The leader alive with another start time means the number was reused: not ours.
  const sessionIsOurs = (sid: number): Promise<boolean> => {
    let verdict = verdicts.get(sid);
    if (!verdict) {
      verdict = readProcStat(sid).then(
        (leader) => leader === undefined || leader.start === sessions?.get(sid),
      );
      verdicts.set(sid, verdict);
    }
    return verdict;
  };
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  await Promise.all(
    entries.map(async (entry) => {
      if (!/^\d+$/.test(entry)) return;
      const pid = Number(entry);
      if (pid === process.pid) return;
      const stat = await readProcStat(pid);
      if (stat === undefined || isZombie(stat)) return; // gone, or only waiting to be reaped
      if (sessions?.has(stat.sid) && (await sessionIsOurs(stat.sid))) {
        found.push(pid);
        return;
      }
      if (!needle) return;
      let environ: Buffer;
      try {
        environ = await readFile(`/proc/${entry}/environ`);
      } catch {
        return; // gone, or not ours to read
      }
      if (environHas(environ, needle)) found.push(pid);
    }),
  );
  return found;
}

/**
 * Kills (SIGKILL) every process of the target, again until a scan finds none, so a process
 * forking while it is being killed does not survive the round it escaped. Returns how many were
 * killed. Linux only (`/proc`); elsewhere it finds nothing.
 */
export async function reapProcesses(target: ReapTarget, logger?: Logger): Promise<number> {
  let killed = 0;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const pids = await findTargets(target);
    if (pids.length === 0) return killed;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // exited meanwhile, or not ours
      }
    }
  }
  const left = await findTargets(target);
  if (left.length > 0) {
    logger?.warn('Processes of a released local sandbox are still running', { pids: left });
  }
  return killed;
}

/** `reapProcesses` of the processes carrying `name=value`. */
export function killMarkedProcesses(name: string, value: string, logger?: Logger): Promise<number> {
  return reapProcesses({ marker: { name, value } }, logger);
}
