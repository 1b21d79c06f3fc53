import { describeWarmPoolProviderContract } from '@sbx/core/testing';
import type { FakeTenkiSandbox } from './testing/fake-tenki-client.js';
import { sdkError } from './testing/fake-tenki-client.js';
import { harness } from './testing/harness.js';

// Pinned behaviours this covers for Tenki (remote-providers.md §8): §8.5.108–111 (warm-pool mixin)
// and §8.7.157–160 and 161 (release after shutdown, reset, reaper, eviction; its client close stays
// in tenki-provider.test.ts).
// The warm-pool lifecycle shared with the other micro-VM providers, on the fake client.
describeWarmPoolProviderContract<FakeTenkiSandbox>(
  'TenkiSandboxProvider on FakeTenkiClient',
  async (ctx) => {
    const { provider, client } = harness(
      {
        replicas: ctx.replicas,
        idle_timeout: ctx.idleTimeoutSeconds,
        warm_pool: { idle_check_interval_seconds: ctx.idleCheckIntervalSeconds },
      },
      { clock: ctx.clock, logger: ctx.logger },
    );
    return {
      provider,
      vmOf(id) {
        const remote = provider.get(id)?.remote;
        if (remote === undefined) throw new Error(`${id} is not active`);
        return remote as FakeTenkiSandbox;
      },
      isRunning: (vm) => !vm.terminated,
      createCount: () => client.createCalls.length,
      runningCount: () => client.sandboxes.filter((s) => !s.terminated).length,
      hold(call) {
        const method = call === 'create' ? 'create' : 'terminate';
        client.gate.pause(method, { times: 1 });
        return client.gate.nextCall(method);
      },
      failTerminally: (vm) =>
        void vm.execFailures.push(sdkError('StreamClosedError', 'stream closed')),
      failHealthCheck: (vm) => void vm.kill(),
      failDestroy: (vm) => void vm.terminateFailures.push(new Error('UNAVAILABLE: try again')),
      resetHandsOver: false,
      cleanup: () => client.dispose(),
    };
  },
);
