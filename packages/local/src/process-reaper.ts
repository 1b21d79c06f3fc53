import { readFile, readdir } from 'node:fs/promises';
import type { Logger } from '@sbx/core';

/**
 * The environment variable every host command of a local sandbox carries. A process group is not
 * enough to find what a sandbox started: `setsid`, a double fork or `nohup … &` leave the group,
 * but they inherit the environment. Best-effort: a process that clears its environment
 * (`env -i`) escapes the scan, and processes of other users cannot be read (documented in the
 * security model; a cgroup per sandbox would be the complete answer).
 */
export const SANDBOX_PROCESS_MARKER = 'SBX_SANDBOX_PROCESS_TAG';
/** The same for the provider instance: what its `shutdown()` reaps, evicted sandboxes included. */
export const PROVIDER_PROCESS_MARKER = 'SBX_PROVIDER_PROCESS_TAG';

const MAX_ROUNDS = 5;

/** Pids (other than this process) whose environment holds `name=value`, read from `/proc`. */
export async function markedProcesses(name: string, value: string): Promise<number[]> {
  if (process.platform !== 'linux') return [];
  const needle = Buffer.from(`${name}=${value}\0`);
  const found: number[] = [];
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  await Promise.all(
    entries.map(async (entry) => {
      if (!/^\d+$/.test(entry)) return;
      const pid = Number(entry);
      if (pid === process.pid) return;
      let environ: Buffer;
      try {
        environ = await readFile(`/proc/${entry}/environ`);
      } catch {
        return; // gone, or not ours to read
      }
      // Each entry is `NAME=value\0`; the first one has no leading NUL.
      if (
        environ.subarray(0, needle.length).equals(needle) ||
        environ.includes(Buffer.concat([Buffer.from([0]), needle]))
      ) {
        found.push(pid);
      }
    }),
  );
  return found;
}

/**
 * Kills (SIGKILL) every process carrying the sandbox's tag, again until a scan finds none, so a
 * process forking while it is being killed does not survive the round it escaped. Returns how
 * many were killed.
 */
export async function killMarkedProcesses(
  name: string,
  value: string,
  logger?: Logger,
): Promise<number> {
  let killed = 0;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const pids = await markedProcesses(name, value);
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
  const left = await markedProcesses(name, value);
  if (left.length > 0) {
    logger?.warn('Processes of a released local sandbox are still running', { pids: left });
  }
  return killed;
}
