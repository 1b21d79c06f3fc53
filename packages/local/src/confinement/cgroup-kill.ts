/**
 * Whether `pid` may be signalled or moved by this process: a real pid that is neither init nor the
 * gateway. A pid of another pid namespace reads as 0 in `cgroup.procs`; kill(0) signals the
 * gateway's own process group, and writing 0 to `cgroup.procs` moves the writer itself.
 */
export function isForeignPid(pid: number, selfPid: number): boolean {
  return Number.isSafeInteger(pid) && pid > 1 && pid !== selfPid;
}

/** The pids a `cgroup.procs` lists, as numbers this process may signal. */
export function parseCgroupProcs(text: string, selfPid: number): number[] {
  const pids: number[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (!/^\d{1,10}$/.test(trimmed)) continue;
    const pid = Number(trimmed);
    if (isForeignPid(pid, selfPid)) pids.push(pid);
  }
  return pids;
}

export interface KillMembersOptions {
  /** The members now (every hierarchy's `cgroup.procs`, parsed). */
  readonly members: () => Promise<readonly number[]>;
  readonly kill: (pid: number) => void;
  /** Lets the killed processes exit between rounds. */
  readonly pause: () => Promise<void>;
  /** Rounds before giving up. */
  readonly maxRounds: number;
}

/**
 * SIGKILLs every member until none is left. A member may fork between the read and the kill; its
 * child shows up in the next read, and only a living member can fork, so each round shrinks what
 * is left (the pids limit bounds how many there can be). Returns the members still there after
 * `maxRounds`.
 */
export async function killCgroupMembers(options: KillMembersOptions): Promise<readonly number[]> {
  for (let round = 0; round < options.maxRounds; round++) {
    const members = await options.members();
    if (members.length === 0) return [];
    for (const pid of members) {
      try {
        options.kill(pid);
      } catch (err) {
        // ESRCH: it exited between the read and the kill.
        if ((err as { code?: unknown }).code !== 'ESRCH') throw err;
      }
    }
    await options.pause();
  }
  return options.members();
}
