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
