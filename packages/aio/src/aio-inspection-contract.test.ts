import { randomBytes } from 'node:crypto';
import { describeInspectionContract } from '@sbx/core/testing';
import { makeHarness } from './testing/provider-harness.js';

// The shared inspection contract (`sbx ls` / `sbx gc`) against the in-memory container backend.
// A container is an orphan by not being tracked here; its grace runs from this instance's first
// sighting, which `reapOrphans` waits out within the call.

const GRACE_MS = 60_000;

describeInspectionContract(
  'AioSandboxProvider (in-memory backend)',
  async ({ clock, ownershipStore }) => {
    const h = await makeHarness({ clock, init: { ownershipStore } });
    return {
      provider: h.provider,
      createUntracked: async (identity) => {
        // A thread's container has the thread's derived id, whichever instance started it.
        const id =
          identity === undefined
            ? randomBytes(8).toString('hex')
            : h.provider.sandboxIdFor(identity);
        return h.backend.startExternal(id).sandboxId;
      },
      exists: async (id) => h.backend.isRunning(id),
      orphanGraceMs: GRACE_MS,
      reapOrphans: (options) => h.provider.reapOrphans({ ...options, graceMs: GRACE_MS }),
      cleanup: () => h.cleanup(),
    };
  },
  { orphanGrace: 'in-call' },
);
