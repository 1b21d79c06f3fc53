import { randomBytes } from 'node:crypto';
import { describeInspectionContract } from '@sbx/core/testing';
import { harness } from './testing/harness.js';

// The shared inspection contract (`sbx ls` / `sbx gc`) on the stand-in runtime. BoxLite lists only:
// a box carries nothing but its name, so no rule could tell whether another process still uses it.
// Another instance's box is a box of this name prefix it left running in the shared BoxLite home.

describeInspectionContract(
  'BoxliteProvider on FakeBoxliteRuntime',
  async ({ clock }) => {
    const { provider, runtime } = harness(
      {},
      { clock, background: false },
      { now: () => clock.now() },
    );
    return {
      provider,
      createUntracked: async (identity) => {
        const id =
          identity === undefined
            ? randomBytes(8).toString('hex')
            : provider.sandboxIdFor(identity.userId, identity.threadId);
        await runtime.seed(provider.boxName(id));
        return id;
      },
      exists: async (id) => runtime.boxes.get(provider.boxName(id))?.running === true,
      cleanup: () => runtime.dispose(),
    };
  },
  { capabilities: 'list' },
);
