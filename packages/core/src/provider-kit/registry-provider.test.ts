import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../contract/sandbox.js';
import { ProviderClosedError } from '../errors/errors.js';
import { MemorySandbox } from '../testing/memory-sandbox.js';
import type { WarmEntry } from '../warm-pool/warm-pool.js';
import { RegistrySandboxProvider } from './registry-provider.js';

interface Entry {
  readonly sandbox: MemorySandbox;
  readonly parkable: boolean;
}

class TestRegistryProvider extends RegistrySandboxProvider<Entry, Entry> {
  readonly stopped: string[] = [];
  teardowns = 0;
  constructor(replicas = 5) {
    super({
      name: 'TestProvider',
      settings: { idleTimeoutSeconds: 0, idleCheckIntervalSeconds: 60, replicas },
      closedMessage: 'TestProvider has been shut down',
      background: false,
    });
  }
  async acquire(): Promise<string> {
    this.assertOpen();
    return this.locks.hold('k', () => 'k');
  }
  async release(): Promise<void> {}
  add(id: string, parkable = true): void {
    this.registry.active.set(id, { sandbox: new MemorySandbox(id), parkable });
  }
  protected sandboxOf(active: Entry): Sandbox {
    return active.sandbox;
  }
  protected async destroyWarm(entry: WarmEntry<Entry>): Promise<void> {
    this.stopped.push(entry.id);
  }
  protected parkOnReset(_id: string, active: Entry): Entry | undefined {
    return active.parkable ? active : undefined;
  }
  protected async stopQuietly(id: string, _active: Entry, reason: string): Promise<void> {
    this.stopped.push(`${id}:${reason}`);
  }
  protected async teardownAll(): Promise<void> {
    this.teardowns += 1;
  }
}

describe('RegistrySandboxProvider', () => {
  it('get() is the registry lookup; reset() parks what it may and stops the rest', async () => {
    const p = new TestRegistryProvider();
    p.add('a');
    p.add('b');
    p.add('c', false);
    expect(p.get('a')).toBeInstanceOf(MemorySandbox);
    await p.reset();
    expect(p.activeIds).toEqual([]);
    expect(p.warmIds).toEqual(['a', 'b']);
    expect(p.stopped).toEqual(['c:reset']);
    expect(await p.acquire()).toBe('k');
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
