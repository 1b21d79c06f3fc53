import type { ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';

/**
 * What exactly to spawn for one command when it is not `<shell> -c <command>` on the host: the
 * program and its arguments, the host user it runs as, bytes handed to it on descriptor 3 (a
 * confined command's seccomp program, which bubblewrap reads from there), and a gate on
 * descriptor 4 (see `admit`).
 */
export interface SpawnPlan {
  readonly file: string;
  readonly args: readonly string[];
  readonly uid?: number;
  readonly gid?: number;
  readonly fd3?: Buffer;
  /**
   * Called with the spawned pid while the program waits at its gate (`GATE_SCRIPT` reading
   * descriptor 4): it places the process (its cgroup) before anything it runs can fork. The gate
   * opens when it resolves; when it rejects, the process is killed instead.
   */
  readonly admit?: (pid: number) => Promise<void>;
  /** Variables the namespace adds to the command's environment (its egress proxy's). */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * The gate a plan with `admit` starts with: waits for a line on descriptor 4, closes it, then
 * runs its arguments. A literal: the command arrives as `"$@"`, never inside the script.
 */
export const GATE_SCRIPT_PREFIX = 'read -r _ <&4; exec 4<&-; ';
export const GATE_SCRIPT = `${GATE_SCRIPT_PREFIX}exec "$@"`;

/** The `stdio` entries past stderr for a plan: descriptor 3 (input) and 4 (gate). */
export function extraStdio(plan: SpawnPlan | undefined): ('pipe' | 'ignore')[] {
  if (plan?.admit) return [plan.fd3 === undefined ? 'ignore' : 'pipe', 'pipe'];
  return plan?.fd3 === undefined ? [] : ['pipe'];
}

/**
 * After the spawn: hands the descriptor-3 bytes over (closing the pipe, its reader reads to
 * EOF), and runs `admit` before opening the gate. `kill` ends the process if admission fails.
 */
export function startPlan(
  child: ChildProcess,
  plan: SpawnPlan | undefined,
  kill: (reason: unknown) => void,
): void {
  if (!plan) return;
  const input = child.stdio[3] as Writable | null | undefined;
  if (input && plan.fd3 !== undefined) {
    // The reader exiting early (a failed start) closes the pipe under us: its exit says why.
    input.on('error', () => {});
    input.end(plan.fd3);
  }
  const gate = child.stdio[4] as Writable | null | undefined;
  if (!plan.admit || !gate || child.pid === undefined) return;
  gate.on('error', () => {});
  plan.admit(child.pid).then(
    () => gate.end('go\n'),
    (error: unknown) => {
      gate.destroy();
      kill(error);
    },
  );
}
