import { describe, expect, it } from 'vitest';
import { FakeSandboxProvider } from '../testing/fake-provider.js';
import { describeLifecycleContract } from '../testing/lifecycle-contract.js';
import { rejectionOf } from '../testing/rejection.js';
import { isSbxError } from '../errors/errors.js';
import { SandboxProvider, type AcquireOptions } from './sandbox-provider.js';

describeLifecycleContract('FakeSandboxProvider (no lifecycle capabilities)', async () => ({
  provider: new FakeSandboxProvider(),
}));

describe('lifecycle capabilities of the base provider', () => {
  it('attack: acquire fromSnapshot on a provider without snapshots is refused before anything is made', async () => {
    // A provider as every real one is built: its acquire starts with `admit`.
    class Admitting extends SandboxProvider {
      made = 0;
      async acquire(options: AcquireOptions = {}): Promise<string> {
        this.admit(options);
        this.made += 1;
        return 'admitted';
      }
      get(): undefined {
        return undefined;
      }
      async release(): Promise<void> {}
    }
    const provider = new Admitting();
    const ref = { provider: 'fake', id: 'x', createdAt: new Date(0).toISOString() };
    const err = await rejectionOf(provider.acquire({ threadId: 't', fromSnapshot: ref }));
    expect(isSbxError(err) && err.code).toBe('CAPABILITY_NOT_SUPPORTED');
    expect(provider.made).toBe(0);
    for (const call of [
      provider.pause('admitted'),
      provider.resume('admitted'),
      provider.snapshot('admitted'),
    ]) {
      const refused = await rejectionOf(call);
      expect(isSbxError(refused) && refused.code).toBe('CAPABILITY_NOT_SUPPORTED');
    }
  });

  it('fromSnapshot without a thread is refused', () => {
    class Snapshotting extends FakeSandboxProvider {
      override get lifecycleSupport() {
        return { pause: false, snapshot: true };
      }
    }
    const ref = { provider: 'fake', id: 'x', createdAt: new Date(0).toISOString() };
    let thrown: unknown;
    try {
      new Snapshotting().admit({ fromSnapshot: ref });
    } catch (err) {
      thrown = err;
    }
    expect(isSbxError(thrown) && thrown.code).toBe('INVALID_ARGUMENT');
  });
});
