import { describeNetworkPolicyContract } from '@sbx/core/testing';
import { BoxliteProvider } from './boxlite-provider.js';
import { FakeBoxliteRuntime } from './testing/fake-boxlite-runtime.js';
import { boxliteConfig } from './testing/harness.js';

// BoxLite does not enforce a network policy yet: every restricting one is refused at acquire.
describeNetworkPolicyContract('BoxliteProvider on FakeBoxliteRuntime (refuses)', async () => {
  const runtime = new FakeBoxliteRuntime();
  const provider = new BoxliteProvider({ config: boxliteConfig({ replicas: 50 }), runtime });
  return { provider, cleanup: () => runtime.dispose() };
});
