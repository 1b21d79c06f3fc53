import { readdir, readlink } from 'node:fs/promises';
import { servicesRequired } from '@sbx/core/testing';
import { probeConfinement } from './bwrap-probe.js';
import { sandboxOwnerFor } from './sandbox-owner.js';

/**
 * Whether this machine can run the confined tests. When it cannot, the reason is printed and
 * the caller skips; on CI (`CI=true`) or with `SBX_REQUIRE_SERVICES=1` it throws instead, so a
 * runner without bubblewrap fails loudly rather than passing with nothing tested.
 */
export function confinementForTests(): boolean {
  const probe = probeConfinement(sandboxOwnerFor(process.getuid?.(), {}));
  if (probe.ok) return true;
  const reason = `${probe.cause}; fix: ${probe.fix}`;
  if (servicesRequired(process.env)) {
    throw new Error(`confinement unavailable (CI=true or SBX_REQUIRE_SERVICES=1): ${reason}`);
  }
  console.warn(`[sbx] skipping confined-execution tests: ${reason}`);
  return false;
}

/** Shell text that runs `script` without its text appearing in the command (base64-decoded). */
export function hidden(script: string): string {
  return `printf %s ${Buffer.from(script).toString('base64')} | base64 -d | /bin/sh`;
}

/** The pid namespace of a host process (`pid:[inode]`), or undefined when it is gone. */
export async function pidNamespaceOf(pid: number): Promise<string | undefined> {
  return readlink(`/proc/${pid}/ns/pid`).catch(() => undefined);
}

/** Host pids of the live processes in pid namespace `ns`. */
export async function processesInNamespace(ns: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    if ((await pidNamespaceOf(Number(entry))) === ns) found.push(Number(entry));
  }
  return found;
}

/** Polls until no process of `ns` is left, or the deadline; returns what is left. */
export async function namespaceEmptiedWithin(ns: string, deadlineMs: number): Promise<number[]> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const left = await processesInNamespace(ns);
    if (left.length === 0 || Date.now() > until) return left;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
