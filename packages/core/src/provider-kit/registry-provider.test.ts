import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../contract/sandbox.js';
import { ProviderClosedError } from '../errors/errors.js';
import { MemorySandbox } from '../testing/memory-sandbox.js';
import type { WarmEntry } from '../warm-pool/warm-pool.js';
import { RegistrySandboxProvider } from './registry-provider.js';

interface Entry {
  readonly sandbox: MemorySandbox;
}

class TestRegistryProvider extends RegistrySandboxProvider<Entry, Entry> {
  readonly stopped: string[] = [];
  teardowns = 0;
  readonly handedOver: string[] = [];
  constructor(protected readonly handsOverOnReset = true) {
    super({
      name: 'TestProvider',
      settings: { idleTimeoutSeconds: 0, idleCheckIntervalSeconds: 60, replicas: 5 },
      closedMessage: 'TestProvider has been shut down',
      background: false,
    });
  }
  async acquire(): Promise<string> {
    this.assertOpen();
    return this.locks.hold('k', () => 'k');
  }
  async release(): Promise<void> {}
  add(id: string): void {
    this.registry.active.set(id, { sandbox: new MemorySandbox(id) });
  }
  park(id: string): void {
    this.registry.pool.put(id, { sandbox: new MemorySandbox(id) });
  }
  protected sandboxOf(active: Entry): Sandbox {
    return active.sandbox;
  }
  protected async destroyWarm(entry: WarmEntry<Entry>): Promise<void> {
    this.stopped.push(entry.id);
  }
  protected async handOver(id: string): Promise<void> {
    this.handedOver.push(id);
  }
  protected async handOverWarm(entry: WarmEntry<Entry>): Promise<void> {
    this.handedOver.push(`${entry.id}:warm`);
  }
  protected async teardownAll(): Promise<void> {
    this.teardowns += 1;
  }
}

describe('RegistrySandboxProvider', () => {
  it('reset() of a hand-over provider gives every sandbox up unstopped and refuses further use', async () => {
    const p = new TestRegistryProvider();
    p.add('a');
    p.park('b');
    expect(p.get('a')).toBeInstanceOf(MemorySandbox);
    await p.reset();
    await p.reset();
    expect(p.activeIds).toEqual([]);
    expect(p.warmIds).toEqual([]);
    expect(p.handedOver).toEqual(['a', 'b:warm']);
    expect(p.stopped).toEqual([]);
    expect(p.teardowns).toBe(0);
    await expect(p.acquire()).rejects.toBeInstanceOf(ProviderClosedError);
  });

  it('reset() of a provider whose sandboxes nothing finds again is its shutdown', async () => {
    const p = new TestRegistryProvider(false);
    p.add('a');
    await p.reset();
    expect(p.teardowns).toBe(1);
    expect(p.handedOver).toEqual([]);
    await expect(p.acquire()).rejects.toBeInstanceOf(ProviderClosedError);
  });

  it('shutdown() runs the teardown once and refuses every later acquire', async () => {
    const p = new TestRegistryProvider();
    await Promise.all([p.shutdown(), p.shutdown()]);
    await p.shutdown();
    expect(p.teardowns).toBe(1);
    await expect(p.acquire()).rejects.toBeInstanceOf(ProviderClosedError);
    await expect(p.acquire()).rejects.toThrow('TestProvider has been shut down');
  });
});
