import { describeWarmPoolProviderContract } from '@sbx/core/testing';
import type { FakeBox } from './testing/fake-boxlite-runtime.js';
import { harness } from './testing/harness.js';

// Pinned behaviours this covers for BoxLite (remote-providers.md §8): §8.5.108–111 (warm-pool
// mixin) and §8.6.125, 127, 128, 130, 131, 133, 134. The BoxLite-specific parts of those stay in
// boxlite-provider.test.ts.
// The warm-pool lifecycle shared with the other micro-VM providers, on the stand-in runtime.
describeWarmPoolProviderContract<FakeBox>('BoxliteProvider on FakeBoxliteRuntime', async (ctx) => {
  const h = harness(
    {
      replicas: ctx.replicas,
      idle_timeout: ctx.idleTimeoutSeconds,
      warm_pool: { idle_check_interval_seconds: ctx.idleCheckIntervalSeconds },
    },
    { clock: ctx.clock, logger: ctx.logger },
  );
  const { provider, runtime } = h;
  return {
    provider,
    vmOf(id) {
      const box = provider.get(id)?.box;
      if (box === undefined) throw new Error(`${id} is not active`);
      return box as FakeBox;
    },
    isRunning: (box) => box.running,
    createCount: () => runtime.gate.count('create'),
    runningCount: () => runtime.history.filter((b) => b.running).length,
    hold(call) {
      const method = call === 'create' ? 'create' : 'stop';
      runtime.gate.pause(method, { times: 1 });
      return runtime.gate.nextCall(method);
    },
    failTerminally: (box) => void box.dieWith('vsock disconnected'),
    failHealthCheck: (box) => void box.failNextExec(new Error('guest agent not responding')),
    failDestroy: (box) => void box.stopFailures.push(new Error('engine busy')),
    resetHandsOver: true,
    cleanup: () => runtime.dispose(),
  };
});
