import { createHash } from 'node:crypto';
import { readlink } from 'node:fs/promises';
import { InvalidArgumentError } from '@sbx/core';
import { readProcStat } from '../proc-stat.js';

/** Longest sandbox name accepted (checked before hashing). */
export const MAX_SANDBOX_CGROUP_NAME = 1024;

/** The directory every gateway's groups live under, in each hierarchy. */
export const CGROUP_PARENT = 'sbx';

const SANDBOX_PREFIX = 'sb-';
const GATEWAY_PATTERN = /^g-(\d{1,20})-(\d{1,10})-(\d{1,20})$/;

/**
 * The directory name of a sandbox's group: a hash of its name, whatever that name is. Names come
 * from thread and sandbox ids (`local:user:thread` has a `:`, a policy run a `/`), and a cgroup
 * directory also shares its namespace with control files (`tasks`, `cgroup.procs`), so no name
 * reaches a path as written. The prefix never starts a control file name.
 *
 * @throws InvalidArgumentError for a name that is not a non-empty string of bounded length
 */
export function sandboxCgroupSegment(name: unknown): string {
  if (typeof name !== 'string' || name === '' || name.length > MAX_SANDBOX_CGROUP_NAME) {
    throw new InvalidArgumentError(
      `A sandbox cgroup name must be a string of 1 to ${MAX_SANDBOX_CGROUP_NAME} characters`,
    );
  }
  return SANDBOX_PREFIX + createHash('sha256').update(name).digest('hex').slice(0, 32);
}

export function isSandboxSegment(segment: string): boolean {
  return /^sb-[0-9a-f]{32}$/.test(segment);
}

/**
 * Names one gateway process for as long as it lives: its pid namespace, pid and start time (a pid
 * the kernel hands out again belongs to a process that started later). The namespace keeps a
 * gateway from judging another pid namespace's gateway dead by a pid it cannot see.
 */
export interface GatewayIdentity {
  readonly pidNamespace: string;
  readonly pid: number;
  readonly start: string;
}

export function gatewaySegment(id: GatewayIdentity): string {
  return `g-${id.pidNamespace}-${id.pid}-${id.start}`;
}

export function parseGatewaySegment(segment: string): GatewayIdentity | undefined {
  const match = GATEWAY_PATTERN.exec(segment);
  if (!match?.[1] || !match[2] || !match[3]) return undefined;
  return { pidNamespace: match[1], pid: Number(match[2]), start: match[3] };
}

async function pidNamespaceOf(pid: number | 'self'): Promise<string | undefined> {
  try {
    return /^pid:\[(\d+)\]$/.exec(await readlink(`/proc/${pid}/ns/pid`))?.[1];
  } catch {
    return undefined;
  }
}

/** This process's identity. */
export async function currentGatewayIdentity(): Promise<GatewayIdentity> {
  const pidNamespace = await pidNamespaceOf('self');
  const stat = await readProcStat(process.pid);
  if (!pidNamespace || !stat) {
    throw new InvalidArgumentError('Cannot read /proc/self: cgroup groups need Linux /proc');
  }
  return { pidNamespace, pid: process.pid, start: stat.start };
}

/**
 * Whether the gateway a segment names is gone. Only a gateway of this pid namespace can be judged;
 * another namespace's is never called dead.
 */
export async function gatewayIsGone(id: GatewayIdentity, self: GatewayIdentity): Promise<boolean> {
  if (id.pidNamespace !== self.pidNamespace) return false;
  const stat = await readProcStat(id.pid);
  return stat === undefined || stat.start !== id.start;
}
