import { DEFAULT_SKILLS_ROOT } from '@sbx/core/internal';
import { describeInspectionContract } from '@sbx/core/testing';
import { buildVmMetadata } from './metadata.js';
import { makeHarness } from './test-support.js';

// The shared inspection contract (`sbx ls` / `sbx gc`) over the in-memory E2B control plane. A VM
// without user/thread tags is an orphan; its grace (`reconciliation_orphan_ttl_seconds`) runs from
// its creation tag, so a call inside it keeps the VM and a later call reaps it.

const ORPHAN_TTL_SECONDS = 600;

describeInspectionContract(
  'E2BSandboxProvider over FakeE2BClient',
  async ({ clock, ownershipStore }) => {
    const h = await makeHarness({
      clock,
      ownership: ownershipStore,
      config: { e2b: { reconciliation_orphan_ttl_seconds: ORPHAN_TTL_SECONDS } },
    });
    return {
      provider: h.provider,
      createUntracked: async (identity) => {
        const vm = await h.fake.seed({
          metadata: buildVmMetadata({
            ownerId: 'another-gateway',
            nowMs: clock.now(),
            ...identity,
            skillsRoot: DEFAULT_SKILLS_ROOT,
            defaultSkillsRoot: DEFAULT_SKILLS_ROOT,
          }),
        });
        return vm.sandboxId;
      },
      exists: async (id) => h.fake.vms.get(id)?.alive === true,
      orphanGraceMs: ORPHAN_TTL_SECONDS * 1000,
      cleanup: () => h.cleanup(),
    };
  },
  { orphanGrace: 'across-calls' },
);
