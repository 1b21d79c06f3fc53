import { randomUUID } from 'node:crypto';
import type { Logger } from '@sbx/core';
import { createSandboxCgroup } from './cgroup-host.js';
import type { ConfinementLimits } from './cgroup-limits.js';
import type { SandboxCgroup } from './cgroup-sandbox-group.js';
import { rlimitArgv } from './rlimit-wrapper.js';
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
