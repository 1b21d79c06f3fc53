import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../contract/sandbox.js';
import { ProviderClosedError } from '../errors/errors.js';
import { Deferred, settle, track } from '../testing/deferred.js';
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
  /** When set, the warm pool's destroy hook and shutdown's teardown wait for it. */
  destroyGate: Deferred | undefined;
  teardownGate: Deferred | undefined;
  /** When set, an acquire's locked section waits for it. */
  sectionGate: Deferred | undefined;
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
    return this.locks.hold('k', async () => {
      await this.sectionGate?.promise;
      return 'k';
    });
  }
  async release(): Promise<void> {}
  /** What a subclass re-checks after its awaits (a create that finishes after a reset). */
  get closedNow(): boolean {
    return this.closed;
  }
  add(id: string): void {
    this.registry.active.set(id, { sandbox: new MemorySandbox(id) });
  }
  park(id: string): void {
    this.registry.pool.put(id, { sandbox: new MemorySandbox(id) });
  }
  protected sandboxOf(active: Entry): Sandbox {
    return active.sandbox;
  }
  /** Makes room for one more sandbox, as a create does: evicts warm entries, oldest first. */
  makeRoom(): Promise<unknown> {
    return this.registry.pool.ensureCapacity(this.registry.active.size + 1);
  }
  protected async destroyWarm(entry: WarmEntry<Entry>): Promise<void> {
    await this.destroyGate?.promise;
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
    await this.teardownGate?.promise;
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
    expect(p.closedNow).toBe(true);
    expect(p.activeIds).toEqual([]);
    expect(p.warmIds).toEqual([]);
    expect(p.handedOver).toEqual(['a', 'b:warm']);
    expect(p.stopped).toEqual([]);
    expect(p.teardowns).toBe(0);
    await expect(p.acquire()).rejects.toBeInstanceOf(ProviderClosedError);
  });

  it('concurrent resets hand each sandbox over once', async () => {
    const p = new TestRegistryProvider();
    p.add('a');
    p.add('b');
    p.park('c');
    await Promise.all([p.reset(), p.reset()]);
    expect(p.handedOver).toEqual(['a', 'b', 'c:warm']);
  });

  for (const [how, end] of [
    ['reset()', (p: TestRegistryProvider) => p.reset()],
    ['shutdown()', (p: TestRegistryProvider) => p.shutdown()],
  ] as const) {
    it(`${how} refuses an acquire queued on the lock; the section already running finishes`, async () => {
      const p = new TestRegistryProvider();
      p.sectionGate = new Deferred();
      const running = p.acquire();
      await settle();
      const queued = track(p.acquire());
      await settle();
      await end(p);
      await settle();
      expect(queued.reason).toBeInstanceOf(ProviderClosedError);
      p.sectionGate.resolve();
      expect(await running).toBe('k');
    });
  }

  it('reset() during a shutdown hands nothing over: the sandboxes are the teardown’s to stop', async () => {
    const p = new TestRegistryProvider();
    p.add('a');
    p.park('b');
    p.teardownGate = new Deferred();
    const shuttingDown = track(p.shutdown());
    await settle();
    expect(p.teardowns).toBe(1);
    await p.reset();
    expect(p.handedOver).toEqual([]);
    p.teardownGate.resolve();
    await shuttingDown.promise;
    await p.reset();
    expect(p.handedOver).toEqual([]);
  });

  it('reset() leaves a warm sandbox whose stop is in flight to that stop, not handed over while stopping', async () => {
    const p = new TestRegistryProvider();
    for (const id of ['b', 'c', 'd', 'e', 'f']) p.park(id);
    p.destroyGate = new Deferred();
    // Five warm sandboxes fill the five replicas: making room stops the oldest, 'b'.
    const evicting = track(p.makeRoom());
    await settle();
    expect(evicting.settled).toBe(false);
    await p.reset();
    // 'b' (the oldest) is being stopped by the eviction: the reset must not hand it over too.
    expect(p.handedOver).not.toContain('b:warm');
    expect(p.handedOver).toEqual(['c:warm', 'd:warm', 'e:warm', 'f:warm']);
    p.destroyGate.resolve();
    await evicting.promise;
    expect(p.stopped).toEqual(['b']);
    expect(p.warmIds).toEqual([]);
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
