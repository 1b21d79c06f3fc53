import { readFile, readdir, readlink } from 'node:fs/promises';

/**
 * Live (non-zombie) processes of a process group, read from `/proc` (Linux). Test support only:
 * it proves that a killed command left nothing running.
 */
export async function liveProcessesInGroup(pgid: number): Promise<number[]> {
  const live: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = await readFile(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited between readdir and read
    }
    // Fields after the parenthesised command name: state, ppid, pgrp, ...
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X')
      live.push(Number(entry));
  }
  return live;
}

/** Where a process's file descriptor points (`pipe:[123]`, `/tmp/x (deleted)`, ...). */
export function fdTarget(pid: number, fd: number): Promise<string> {
  return readlink(`/proc/${pid}/fd/${fd}`);
}

export function killGroupQuietly(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export const hasProcFs = process.platform === 'linux';

/**
 * The start time (clock ticks after boot, field 22 of `/proc/<pid>/stat`) of a live process, or
 * undefined when there is none or it is a zombie. A pid and its start time name one process: a
 * pid the kernel reused has another.
 */
export async function liveStartTime(pid: number): Promise<string | undefined> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
  return fields[19];
}

/** A process named by its pid and start time. */
export interface ProcessIdentity {
  readonly name: string;
  readonly pid: number;
  readonly start: string;
}

/** Those of `processes` still alive (the same pid with the same start time, not a zombie). */
export async function stillAlive(
  processes: readonly ProcessIdentity[],
): Promise<ProcessIdentity[]> {
  const alive: ProcessIdentity[] = [];
  for (const p of processes) if ((await liveStartTime(p.pid)) === p.start) alive.push(p);
  return alive;
}

/**
 * Polls (every 50 ms) until none of `processes` is alive or `deadlineMs` has passed; returns the
 * survivors. A deadline, not a fixed wait: on a loaded machine a kill may take a while to land.
 */
export async function survivorsAfter(
  processes: readonly ProcessIdentity[],
  deadlineMs: number,
): Promise<ProcessIdentity[]> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const alive = await stillAlive(processes);
    if (alive.length === 0 || Date.now() >= until) return alive;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGKILL to each of `processes` still alive: a failing test leaves nothing running. */
export async function killSurvivors(processes: readonly ProcessIdentity[]): Promise<void> {
  for (const p of await stillAlive(processes)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}
