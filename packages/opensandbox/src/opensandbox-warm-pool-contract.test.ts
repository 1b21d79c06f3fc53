import { describeWarmPoolProviderContract } from '@sbx/core/testing';
import { OpenSandboxProvider } from './opensandbox-provider.js';
import type { FakeRemoteState } from './testing/fake-opensandbox-sdk.js';
import { FakeOpenSandbox } from './testing/fake-opensandbox-sdk.js';
import { fakeApiError } from './testing/fake-sdk-errors.js';

// Pinned behaviours this covers for OpenSandbox (remote-providers.md §8): §8.5.108–111 (warm-pool
// mixin), §8.8.171 (reset parks; shutdown destroys, idempotent, reaper stops) and §8.8.179
// (concurrent same-scope acquires create once). OpenSandbox-specific checks stay in
// opensandbox-provider.test.ts.
// The warm-pool lifecycle shared with the other micro-VM providers, on the in-memory SDK fake.
describeWarmPoolProviderContract<FakeRemoteState>(
  'OpenSandboxProvider on the fake SDK',
  async (ctx) => {
    const fake = new FakeOpenSandbox();
    const provider = new OpenSandboxProvider({
      config: {
        replicas: ctx.replicas,
        idleTimeout: ctx.idleTimeoutSeconds,
        warmPool: { idleCheckIntervalSeconds: ctx.idleCheckIntervalSeconds },
        opensandbox: { domain: 'opensandbox.test', protocol: 'https', api_key: 'k' },
      },
      sdk: fake.sdk,
      clock: ctx.clock,
      logger: ctx.logger,
      env: {},
    });
    return {
      provider,
      vmOf(id) {
        const sandbox = provider.get(id);
        if (sandbox === undefined) throw new Error(`${id} is not active`);
        return fake.remote(sandbox.remoteId);
      },
      isRunning: (remote) => remote.alive,
      createCount: () => fake.gate.count('create'),
      runningCount: () => fake.aliveIds.length,
      hold(call) {
        const op = call === 'create' ? 'create' : 'kill';
        fake.gate.pause(op, { times: 1 });
        return fake.gate.nextCall(op);
      },
      // The server answers 404 for a sandbox it no longer has.
      failTerminally: (remote) =>
        void fake.failNext('run', fakeApiError(404, 'sandbox not found'), { remoteId: remote.id }),
      failHealthCheck: (remote) =>
        void fake.failNext('run', fakeApiError(500, 'execd not responding'), {
          remoteId: remote.id,
        }),
      failDestroy: (remote) =>
        void fake.failNext('kill', fakeApiError(500, 'lifecycle busy'), { remoteId: remote.id }),
      resetHandsOver: false,
      cleanup: () => fake.dispose(),
    };
  },
);
