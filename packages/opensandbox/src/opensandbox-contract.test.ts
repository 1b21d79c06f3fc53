import { silentLogger } from '@sbx/core';
import {
  describeProviderContract,
  describeProcessContract,
  describeSandboxContract,
  sandboxFromProvider,
} from '@sbx/core/testing';
import { OpenSandboxProvider } from './opensandbox-provider.js';
import { FakeOpenSandbox } from './testing/fake-opensandbox-sdk.js';

// The shared conformance suites, against the in-memory fake of the SDK (commands run for real in
// bash, files in a private temp directory per remote), once with the host's GNU tools and once with
// busybox only (the portable path of the remote search protocol). The same suites run through the
// real SDK against the stand-in server in `sdk-standin.test.ts`.

const config = { opensandbox: { domain: 'opensandbox.test', protocol: 'https', api_key: 'k' } };

describeProviderContract('OpenSandboxProvider (fake SDK)', async () => {
  const fake = new FakeOpenSandbox();
  const provider = new OpenSandboxProvider({ config, sdk: fake.sdk, logger: silentLogger });
  return { provider, cleanup: () => fake.dispose() };
});

for (const userland of ['host', 'busybox'] as const) {
  describeSandboxContract(`OpenSandboxSandbox (fake SDK, ${userland} userland)`, async () => {
    const fake = new FakeOpenSandbox({ userland });
    const provider = new OpenSandboxProvider({ config, sdk: fake.sdk, logger: silentLogger });
    return sandboxFromProvider(provider, {
      threadId: 'sandbox-contract',
      cleanup: () => fake.dispose(),
    });
  });
}

let openSandboxProcessCase = 0;
describeProcessContract('OpenSandboxSandbox (fake SDK)', async () => {
  const fake = new FakeOpenSandbox();
  const provider = new OpenSandboxProvider({ config, sdk: fake.sdk, logger: silentLogger });
  return sandboxFromProvider(provider, {
    threadId: `process-${++openSandboxProcessCase}`,
    cleanup: () => fake.dispose(),
  });
});
