import { describe, expect, it } from 'vitest';
import { FakeSandboxProvider } from './fake-provider.js';
import { rejectionOf } from './rejection.js';
import { sandboxFromProvider } from './sandbox-from-provider.js';

describe('sandboxFromProvider', () => {
  it('acquires a thread sandbox for user `contract` and hands out the registered object', async () => {
    const provider = new FakeSandboxProvider();
    const sut = await sandboxFromProvider(provider, { threadId: 'suite-1' });
    expect(provider.acquired).toEqual(['fake:contract:suite-1']);
    expect(sut.sandbox).toBe(provider.get('fake:contract:suite-1'));
    expect(sut.workdir).toBe('/mnt/user-data/workspace');
  });

  it('cleanup shuts the provider down first, then runs the caller’s cleanup', async () => {
    const provider = new FakeSandboxProvider();
    const order: string[] = [];
    const sut = await sandboxFromProvider(provider, {
      threadId: 't',
      cleanup: async () => {
        order.push(`cleanup after ${provider.gate.count('shutdown')} shutdown`);
      },
    });
    expect(provider.gate.count('shutdown')).toBe(0);
    await sut.cleanup?.();
    expect(order).toEqual(['cleanup after 1 shutdown']);
  });

  it('fails loudly when the acquired id has no sandbox', async () => {
    class VanishingProvider extends FakeSandboxProvider {
      override get(): undefined {
        return undefined;
      }
    }
    const err = await rejectionOf(sandboxFromProvider(new VanishingProvider(), { threadId: 't' }));
    expect((err as Error).message).toBe('acquired sandbox fake:contract:t is not registered');
  });
});
