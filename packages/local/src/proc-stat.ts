import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** What `/proc/<pid>/stat` says about a process that the reaper needs (Linux). */
export interface ProcStat {
  /** `R`, `S`, `D`, `Z` (zombie), `X` (dead), ... */
  readonly state: string;
  readonly pgid: number;
  /** The session id: the pid of the session's leader. */
  readonly sid: number;
  /**
   * Clock ticks after boot at which the process started. With the pid it names one process: a
   * pid the kernel hands out again belongs to a process that started later.
   */
  readonly start: string;
}

/**
 * Reads one `stat` line. The command name (field 2) is in parentheses and may itself contain
 * spaces and parentheses, so the fields are counted from the last `)`.
 */
export function parseProcStat(line: string): ProcStat | undefined {
  const close = line.lastIndexOf(')');
  if (close < 0) return undefined;
  // Field 3 (state) onwards: state ppid pgrp session ... starttime is field 22.
  const fields = line.slice(close + 2).split(' ');
  const state = fields[0];
  const pgid = Number(fields[2]);
  const sid = Number(fields[3]);
  const start = fields[19];
  if (!state || !Number.isSafeInteger(pgid) || !Number.isSafeInteger(sid) || !start) {
    return undefined;
  }
  return { state, pgid, sid, start };
}

/** Undefined when the process is gone (or the platform has no `/proc`). */
export async function readProcStat(pid: number): Promise<ProcStat | undefined> {
  try {
    return parseProcStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * The same, synchronously: one small read of a virtual file (microseconds), for the moment right
 * after a spawn, before the event loop can reap the child and free its pid.
 */
export function readProcStatSync(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

export function isZombie(stat: ProcStat): boolean {
  return stat.state === 'Z' || stat.state === 'X';
}
