import { describe, expect, it } from 'vitest';
import type { LeaseProvider } from './lease-types.js';
import { discardSandboxLeaseManager, getSandboxLeaseManager } from './lease-manager-registry.js';
import { FakeSandboxProvider } from '../testing/fake-provider.js';

const T1 = { userId: 'u1', threadId: 't1' } as const;

describe('the lease manager registry', () => {
  it('L19 managers are registered by provider identity, not equality', async () => {
    class EqualProvider extends FakeSandboxProvider {
      equals(): boolean {
        return true;
      }
      override toString(): string {
        return 'same';
      }
    }
    const a = new EqualProvider();
    const b = new EqualProvider();
    const ma = getSandboxLeaseManager(a);
    expect(getSandboxLeaseManager(a)).toBe(ma);
    const mb = getSandboxLeaseManager(b);
    expect(mb).not.toBe(ma);
    const sa = await ma.acquire('owner', T1);
    expect(mb.bindingFor('owner')).toBeUndefined();

    // A duck-typed provider that is not a SandboxProvider (and has no admit) works too.
    const duck: LeaseProvider = {
      acquire: (o) => a.acquire(o),
      get: (id) => a.get(id),
      release: (id) => a.release(id),
    };
    expect(getSandboxLeaseManager(duck)).not.toBe(ma);

    expect(discardSandboxLeaseManager(b)).toBe(true);
    expect(discardSandboxLeaseManager(b)).toBe(false);
    expect(getSandboxLeaseManager(a)).toBe(ma);
    expect(ma.bindingFor('owner')).toBe(sa);
    expect(getSandboxLeaseManager(b)).not.toBe(mb); // a fresh one after discard
    discardSandboxLeaseManager(a);
    discardSandboxLeaseManager(b);
    discardSandboxLeaseManager(duck);
  });

  it('S13 discarding a provider’s manager closes its serializer so nothing is retained', async () => {
    const provider = new FakeSandboxProvider();
    const manager = getSandboxLeaseManager(provider);
    await manager.acquire('owner', T1);
    expect(discardSandboxLeaseManager(provider)).toBe(true);
    expect(manager.closed).toBe(true);
    expect(getSandboxLeaseManager(provider)).not.toBe(manager);
    discardSandboxLeaseManager(provider);
  });
});
