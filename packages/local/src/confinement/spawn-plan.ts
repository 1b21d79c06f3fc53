import type { Writable } from 'node:stream';

/**
 * What exactly to spawn for one command when it is not `<shell> -c <command>` on the host: the
 * program and its arguments, the host user it runs as, and bytes handed to it on descriptor 3
 * (a confined command's seccomp program, which bubblewrap reads from there).
 */
export interface SpawnPlan {
  readonly file: string;
  readonly args: readonly string[];
  readonly uid?: number;
  readonly gid?: number;
  readonly fd3?: Buffer;
}

/** The `stdio` entry of descriptor 3 for a plan (a pipe when it carries bytes). */
export function extraStdio(plan: SpawnPlan | undefined): 'pipe'[] {
  return plan?.fd3 === undefined ? [] : ['pipe'];
}

/** Hands a plan's descriptor-3 bytes over and closes the pipe (its reader reads to EOF). */
export function writePlanInput(
  pipe: Writable | null | undefined,
  plan: SpawnPlan | undefined,
): void {
  if (!pipe || plan?.fd3 === undefined) return;
  // The reader exiting early (a failed start) closes the pipe under us: its exit says why.
  pipe.on('error', () => {});
  pipe.end(plan.fd3);
}
