import { silentLogger } from '@sbx/core';
import { describeNetworkPolicyContract } from '@sbx/core/testing';
import { OpenSandboxProvider } from './opensandbox-provider.js';
import { FakeOpenSandbox } from './testing/fake-opensandbox-sdk.js';

const config = { opensandbox: { domain: 'opensandbox.test', protocol: 'https', api_key: 'k' } };

// OpenSandbox does not enforce a network policy yet: every restricting one is refused at acquire.
describeNetworkPolicyContract('OpenSandboxProvider (fake SDK, refuses)', async () => {
  const fake = new FakeOpenSandbox();
  const provider = new OpenSandboxProvider({ config, sdk: fake.sdk, logger: silentLogger });
  return { provider, cleanup: () => fake.dispose() };
});
