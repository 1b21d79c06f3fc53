import { access, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { SbxError, type SbxErrorOptions } from '@sbx/core';
import { parseCgroupProcs } from './cgroup-kill.js';

/** A cgroup file could not be written or a group could not be made or removed. */
export class ConfinementCgroupError extends SbxError {
  static override readonly CODE = 'CONFINEMENT_CGROUP';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

/** A control file's text, or undefined when this kernel or hierarchy has no such file. */
export async function readControl(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return undefined;
    throw new ConfinementCgroupError(`Cannot read ${file}`, { cause: err });
  }
}

/**
 * Writes a control file that must exist: opened without O_CREAT (`r+`), so a file this kernel
 * lacks is an error rather than an attempt to create one in the cgroup directory.
 */
export async function writeControl(file: string, value: string): Promise<void> {
  try {
    await writeFile(file, value, { flag: 'r+' });
  } catch (err) {
    throw new ConfinementCgroupError(`Cannot write ${value.trim()} to ${file}`, { cause: err });
  }
}

/** Whether a control file exists; by its entry, since some (`cgroup.kill`) cannot be read. */
export async function controlExists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return false;
    throw new ConfinementCgroupError(`Cannot look up ${file}`, { cause: err });
  }
}

/** The signalable members of one group. */
export async function groupMembers(dir: string): Promise<number[]> {
  return parseCgroupProcs((await readControl(path.join(dir, 'cgroup.procs'))) ?? '', process.pid);
}

export async function childDirs(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return [];
    throw new ConfinementCgroupError(`Cannot list ${dir}`, { cause: err });
  }
}

/** Pause between the rounds of a bounded wait for the kernel to finish with exiting tasks. */
export const ROUND_PAUSE_MS = 10;

export function pauseRound(): Promise<void> {
  return delay(ROUND_PAUSE_MS);
}

/**
 * Removes an emptied group. The kernel may still hold it for a moment after its last task exits
 * (EBUSY), so a bounded number of retries; a group already gone counts as removed.
 */
export async function removeGroupDir(dir: string, rounds = 200): Promise<void> {
  for (let round = 0; ; round++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || round >= rounds) {
        throw new ConfinementCgroupError(`Cannot remove cgroup ${dir}`, { cause: err });
      }
      await pauseRound();
    }
  }
}
