import { randomUUID } from 'node:crypto';
import type { Logger } from '@sbx/core';
import { createSandboxCgroup } from './cgroup-host.js';
import type { ConfinementLimits } from './cgroup-limits.js';
import type { SandboxCgroup } from './cgroup-sandbox-group.js';
import { SH_WRAPPER, rlimitArgv } from './rlimit-wrapper.js';
import { GATE_SCRIPT_PREFIX } from './spawn-plan.js';
import type { NamespaceLimitsHooks } from './thread-namespace.js';

/**
 * The limits of one thread's namespace: a cgroup of its own where the host offers one (the
 * namespace's init is moved into it when it starts, each entering command before it can fork),
 * and the rlimit floor on every entering command either way. The group is destroyed, with
 * whatever is still in it, when the namespace ends.
 */
export function namespaceLimits(
  sandboxId: string,
  limits: ConfinementLimits,
  log: Logger,
): NamespaceLimitsHooks {
  let group: SandboxCgroup | undefined;
  return {
    async attach(initPid) {
      // A fresh group per namespace: a restarted namespace never shares the old one's counters.
      group = await createSandboxCgroup({ name: `${sandboxId}#${randomUUID()}`, limits, log });
      await group?.addPid(initPid);
    },
    wrapEntry: (argv) => rlimitArgv(limits, argv),
    // With a cgroup in force (its pids limit counts the whole sandbox), the shell form of the
    // rlimits (no `nproc`) runs behind the gate in the same process.
    wrapGated(argv) {
      const [shell, flag, script, ...rest] = rlimitArgv(limits, argv, SH_WRAPPER);
      return [shell as string, flag as string, `${GATE_SCRIPT_PREFIX}${script as string}`, ...rest];
    },
    admitter() {
      const current = group;
      return current ? (pid: number) => current.addPid(pid) : undefined;
    },
    async oomKills() {
      return (await group?.memoryEvents())?.oomKills;
    },
    async release() {
      const current = group;
      group = undefined;
      await current?.destroy();
    },
  };
}
