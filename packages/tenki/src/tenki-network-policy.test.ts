import { describeNetworkPolicyContract } from '@sbx/core/testing';
import { FakeTenkiClient } from './testing/fake-tenki-client.js';
import { tenkiConfig } from './testing/harness.js';
import { TenkiSandboxProvider } from './tenki-provider.js';

// Tenki does not enforce a network policy yet: every restricting one is refused at acquire.
describeNetworkPolicyContract('TenkiSandboxProvider on FakeTenkiClient (refuses)', async () => {
  const client = new FakeTenkiClient();
  const provider = new TenkiSandboxProvider({ config: tenkiConfig({ replicas: 50 }), client });
  return { provider, cleanup: () => client.dispose() };
});
