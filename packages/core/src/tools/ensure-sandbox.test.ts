import { describe, expect, it } from 'vitest';
import {
  SandboxAuthorizationError,
  SandboxNotFoundError,
  SandboxRuntimeError,
  isSbxError,
} from '../errors/errors.js';
import { SandboxLeaseManager } from '../execution-leases/lease-manager.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { createToolContext } from './create-tool-context.js';
import { ensureSandboxInitialized } from './ensure-sandbox.js';
import type { SandboxAcquireRequest, ToolContext, ToolLeaseManager } from './tool-context.js';
import { runToolInvocation } from './tool-invocation.js';
import { sandboxForTool } from './tool-sandbox.js';

/** A provider whose `get` misses right after `acquire` (the sandbox vanished meanwhile). */
class VanishingProvider extends MemorySandboxProvider {
  override async acquire(...args: Parameters<MemorySandboxProvider['acquire']>): Promise<string> {
    const id = await super.acquire(...args);
    this.kill(id);
    return id;
  }
}

class RecordingLeaseManager implements ToolLeaseManager {
  readonly calls: string[] = [];
  constructor(private readonly provider: MemorySandboxProvider) {}
  async acquire(owner: string, request: SandboxAcquireRequest): Promise<string> {
    this.calls.push(`acquire ${owner} ${request.userId}/${request.threadId}`);
    return this.provider.acquire({ threadId: request.threadId, userId: request.userId });
  }
  async reuseOrAcquire(owner: string, id: string, request: SandboxAcquireRequest): Promise<string> {
    this.calls.push(`reuse ${owner} ${id}`);
    return this.provider.get(id) ? id : this.acquire(owner, request);
  }
  async release(owner: string): Promise<void> {
    this.calls.push(`release ${owner}`);
  }
}

function context(overrides: Partial<ToolContext> = {}): ToolContext {
  return createToolContext({
    provider: new MemorySandboxProvider(),
    threadId: 't1',
    userId: 'alice',
    ...overrides,
  });
}

describe('§2.4 ensureSandboxInitialized', () => {
  it('needs a runtime and its state', async () => {
    await expect(ensureSandboxInitialized(undefined)).rejects.toThrow(
      new SandboxRuntimeError('Tool runtime not available'),
    );
    const ctx = context();
    (ctx as { state: unknown }).state = undefined;
    await expect(ensureSandboxInitialized(ctx)).rejects.toThrow('Tool runtime state not available');
  });

  it('acquires lazily for the thread and user, and persists the id in state', async () => {
    const provider = new MemorySandboxProvider();
    const ctx = context({ provider });
    const sandbox = await ensureSandboxInitialized(ctx);
    expect(sandbox.id).toBe('memory:alice:t1');
    expect(ctx.state.sandboxId).toBe('memory:alice:t1');
    expect(provider.acquireCalls).toEqual([{ threadId: 't1', userId: 'alice' }]);
  });

  it('reuses a persisted id the provider still knows, without acquiring', async () => {
    const provider = new MemorySandboxProvider();
    const id = await provider.acquire({ threadId: 't1', userId: 'alice' });
    const ctx = context({ provider, state: { sandboxId: id } });
    expect((await ensureSandboxInitialized(ctx)).id).toBe(id);
    expect(provider.acquireCalls).toHaveLength(1);
  });

  it('reuses a persisted id even without a thread id', async () => {
    const provider = new MemorySandboxProvider();
    const id = await provider.acquire({ threadId: 't1' });
    const ctx = context({ provider, state: { sandboxId: id }, threadId: undefined });
    expect((await ensureSandboxInitialized(ctx)).id).toBe(id);
  });

  it('acquires a replacement when the persisted id is gone, replacing the state', async () => {
    const provider = new MemorySandboxProvider();
    const ctx = context({ provider, state: { sandboxId: 'memory:alice:stale' } });
    expect((await ensureSandboxInitialized(ctx)).id).toBe('memory:alice:t1');
    expect(ctx.state.sandboxId).toBe('memory:alice:t1');
  });

  it('fails without a thread id when nothing is persisted', async () => {
    await expect(ensureSandboxInitialized(context({ threadId: undefined }))).rejects.toThrow(
      'Thread ID not available in runtime context',
    );
  });

  it('passes acquisition through the provider admit hook (fail closed before acquire)', async () => {
    const provider = new MemorySandboxProvider();
    provider.admit = () => {
      throw new SandboxRuntimeError('not admitted');
    };
    await expect(ensureSandboxInitialized(context({ provider }))).rejects.toThrow('not admitted');
    expect(provider.acquireCalls).toEqual([]);
  });

  it('rolls back and raises SandboxNotFoundError when the sandbox vanished after acquisition', async () => {
    const provider = new VanishingProvider();
    const ctx = context({ provider });
    const err = await ensureSandboxInitialized(ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxNotFoundError);
    expect((err as SandboxNotFoundError).baseMessage).toBe('Sandbox not found after acquisition');
    expect((err as SandboxNotFoundError).sandboxId).toBe('memory:alice:t1');
    expect(provider.releaseCalls).toEqual(['memory:alice:t1']);
    expect(ctx.state.sandboxId).toBeUndefined();
  });

  it('uses an injected acquire strategy instead of the provider', async () => {
    const provider = new MemorySandboxProvider();
    const requests: SandboxAcquireRequest[] = [];
    const ctx = context({
      provider,
      acquireSandbox: async (_ctx, request) => {
        requests.push(request);
        return provider.acquire({ threadId: 'other', userId: request.userId });
      },
    });
    expect((await ensureSandboxInitialized(ctx)).id).toBe('memory:alice:other');
    expect(requests).toEqual([{ threadId: 't1', userId: 'alice' }]);
  });
});

describe('§2.5 lease manager integration', () => {
  it('acquires through the manager when the run has a lease owner', async () => {
    const provider = new MemorySandboxProvider();
    const leaseManager = new RecordingLeaseManager(provider);
    const ctx = context({ provider, leaseManager, leaseOwnerId: 'agent:1' });
    await ensureSandboxInitialized(ctx);
    expect(leaseManager.calls).toEqual(['acquire agent:1 alice/t1']);
  });

  it('calls the provider directly without an owner, even when a manager is present', async () => {
    const provider = new MemorySandboxProvider();
    const leaseManager = new RecordingLeaseManager(provider);
    await ensureSandboxInitialized(context({ provider, leaseManager }));
    expect(leaseManager.calls).toEqual([]);
    expect(provider.acquireCalls).toHaveLength(1);
  });

  it('binds the owner to a persisted id through reuseOrAcquire', async () => {
    const provider = new MemorySandboxProvider();
    const id = await provider.acquire({ threadId: 't1', userId: 'alice' });
    const leaseManager = new RecordingLeaseManager(provider);
    const ctx = context({
      provider,
      leaseManager,
      leaseOwnerId: 'agent:2',
      state: { sandboxId: id },
    });
    expect((await ensureSandboxInitialized(ctx)).id).toBe(id);
    expect(leaseManager.calls).toEqual([`reuse agent:2 ${id}`]);
  });

  it('rolls a vanished acquisition back by releasing the owner', async () => {
    const provider = new VanishingProvider();
    const leaseManager = new RecordingLeaseManager(provider);
    const ctx = context({ provider, leaseManager, leaseOwnerId: 'agent:3' });
    await expect(ensureSandboxInitialized(ctx)).rejects.toThrow(
      'Sandbox not found after acquisition',
    );
    expect(leaseManager.calls).toEqual(['acquire agent:3 alice/t1', 'release agent:3']);
    expect(provider.releaseCalls).toEqual([]);
  });
});

describe('with the real SandboxLeaseManager', () => {
  it('binds each run owner, so only the last holder parks the sandbox', async () => {
    const provider = new MemorySandboxProvider({ releaseParks: true });
    const manager = new SandboxLeaseManager(provider);
    const leaseManager: ToolLeaseManager = manager;
    const first = context({ provider, leaseManager, leaseOwnerId: 'agent:first' });
    const sandbox = await ensureSandboxInitialized(first);
    expect(manager.bindingFor('agent:first')).toBe(sandbox.id);

    const second = context({
      provider,
      leaseManager,
      leaseOwnerId: 'agent:second',
      state: { sandboxId: sandbox.id },
    });
    expect((await ensureSandboxInitialized(second)).id).toBe(sandbox.id);
    expect(manager.bindingFor('agent:second')).toBe(sandbox.id);
    expect(provider.acquireCalls).toHaveLength(1);

    await manager.release('agent:first');
    expect(provider.releaseCalls).toEqual([]);
    await manager.release('agent:second');
    expect(provider.releaseCalls).toEqual([sandbox.id]);
    manager.close();
  });
});

describe('authorization hook (sandbox:execute gate)', () => {
  function gated(decide: () => void) {
    const decisions: string[] = [];
    const provider = new MemorySandboxProvider();
    const ctx = context({
      provider,
      authorize: async (c) => {
        decisions.push(c.state.sandboxId ?? '(none)');
        decide();
      },
    });
    return { ctx, provider, decisions };
  }

  it('is asked before an acquisition, and a denial acquires nothing', async () => {
    const { ctx, provider, decisions } = gated(() => {
      throw new SandboxAuthorizationError(undefined, 'user');
    });
    await expect(ensureSandboxInitialized(ctx)).rejects.toThrow('not permitted for your role');
    expect(decisions).toEqual(['(none)']);
    expect(provider.acquireCalls).toEqual([]);
  });

  it('is asked again before reusing a persisted id: a warm sandbox confers no permission', async () => {
    let allow = true;
    const { ctx, decisions } = gated(() => {
      if (!allow) throw new SandboxAuthorizationError(undefined, 'user');
    });
    await ensureSandboxInitialized(ctx);
    allow = false;
    await expect(ensureSandboxInitialized(ctx)).rejects.toBeInstanceOf(SandboxAuthorizationError);
    expect(decisions).toEqual(['(none)', 'memory:alice:t1']);
  });

  it('decides once per tool invocation, however often the sandbox is touched', async () => {
    const { ctx, decisions } = gated(() => {});
    await runToolInvocation(ctx, async () => {
      await ensureSandboxInitialized(ctx);
      await Promise.all([ensureSandboxInitialized(ctx), ensureSandboxInitialized(ctx)]);
    });
    expect(decisions).toHaveLength(1);
    await runToolInvocation(ctx, () => ensureSandboxInitialized(ctx));
    expect(decisions).toHaveLength(2);
  });

  it('decides on every touch outside an invocation', async () => {
    const { ctx, decisions } = gated(() => {});
    await ensureSandboxInitialized(ctx);
    await ensureSandboxInitialized(ctx);
    expect(decisions).toHaveLength(2);
  });

  it('never remembers a denial inside an invocation', async () => {
    let calls = 0;
    const { ctx } = gated(() => {
      calls++;
      throw new SandboxAuthorizationError();
    });
    await runToolInvocation(ctx, async () => {
      await expect(ensureSandboxInitialized(ctx)).rejects.toBeInstanceOf(SandboxAuthorizationError);
      await expect(ensureSandboxInitialized(ctx)).rejects.toBeInstanceOf(SandboxAuthorizationError);
    });
    expect(calls).toBe(2);
  });
});

describe('the ids of a tool context', () => {
  // Built at run time: ("acme", "bob:notes") and ("acme:bob", "notes") join to the same text.
  const colon = String.fromCharCode(58);
  const victim = { userId: `acme${colon}bob`, threadId: 'notes' };
  const attacker = { userId: 'acme', threadId: `bob${colon}notes` };

  it('attack: a ":" in the context’s ids never reaches another tenant’s sandbox, by any acquisition path', async () => {
    const provider = new MemorySandboxProvider();
    // The victim's sandbox, made before ids were checked (the memory provider has no admit call).
    const victimId = await provider.acquire(victim);
    await provider.get(victimId)!.writeFile('/mnt/user-data/workspace/secret.txt', 'victim');
    const decisions: string[] = [];
    const leaseManager = new RecordingLeaseManager(provider);
    const strategy: string[] = [];
    const paths: Partial<ToolContext>[] = [
      {},
      { leaseManager, leaseOwnerId: 'agent:1' },
      { acquireSandbox: async () => (strategy.push('called'), victimId) },
      { state: { sandboxId: victimId } },
    ];
    for (const overrides of paths) {
      // Built by hand, as hosts may: the tool layer's own check is the one that counts.
      const ctx: ToolContext = {
        provider,
        ...attacker,
        state: {},
        authorize: async () => {
          decisions.push('asked');
        },
        ...overrides,
      };
      const err = await ensureSandboxInitialized(ctx).catch((e: unknown) => e);
      expect(isSbxError(err) && err.code).toBe('INVALID_ARGUMENT');
      expect(ctx.state.sandboxId).toBe(overrides.state?.sandboxId);
    }
    expect(provider.acquireCalls).toHaveLength(1);
    expect(leaseManager.calls).toEqual([]);
    expect(strategy).toEqual([]);
    expect(decisions).toEqual([]);
  });

  it('a tool reports the refusal as its typed error result', async () => {
    const ctx: ToolContext = { provider: new MemorySandboxProvider(), ...attacker, state: {} };
    const result = await sandboxForTool(ctx);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(/^Error: Invalid threadId: must not contain ':'/);
  });

  it('createToolContext refuses them at once, user and thread alike', () => {
    const provider = new MemorySandboxProvider();
    for (const ids of [attacker, victim, { userId: 'u', threadId: '..' }]) {
      let err: unknown;
      try {
        createToolContext({ provider, ...ids });
      } catch (e) {
        err = e;
      }
      expect(isSbxError(err) && err.code, JSON.stringify(ids)).toBe('INVALID_ARGUMENT');
    }
    expect(() =>
      createToolContext({ provider, userId: 'acme', threadId: 'bob-notes' }),
    ).not.toThrow();
  });
});
