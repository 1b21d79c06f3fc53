import { describeInspectionContract } from '@sbx/core/testing';
import { OpenSandboxProvider } from './opensandbox-provider.js';
import { FakeOpenSandbox } from './testing/fake-opensandbox-sdk.js';

// The shared inspection contract (`sbx ls` / `sbx gc`) on the in-memory SDK. OpenSandbox lists
// only: no ownership store says whether another process still uses a remote. Another instance is
// a second provider on the same fake server; sandboxes are listed by their server id.

const SECURE = { domain: 'opensandbox.test', protocol: 'https', api_key: 'k' };
const SILENT = { debug() {}, info() {}, warn() {}, error() {} };

describeInspectionContract(
  'OpenSandboxProvider on the fake SDK',
  async ({ clock }) => {
    const fake = new FakeOpenSandbox({ now: () => clock.now() });
    const build = () =>
      new OpenSandboxProvider({
        config: { opensandbox: SECURE },
        sdk: fake.sdk,
        clock,
        logger: SILENT,
        env: {},
        background: false,
      });
    const provider = build();
    const other = build();
    const remoteOf = (p: OpenSandboxProvider, id: string): string => {
      const sandbox = p.get(id);
      if (sandbox === undefined) throw new Error(`${id} is not active`);
      return sandbox.remoteId;
    };
    return {
      provider,
      createUntracked: async (identity) => remoteOf(other, await other.acquire(identity)),
      exists: async (id) => fake.remotes.get(id)?.alive === true,
      listedIdOf: (id) => remoteOf(provider, id),
      cleanup: async () => {
        await other.shutdown();
        await fake.dispose();
      },
    };
  },
  { capabilities: 'list' },
);
