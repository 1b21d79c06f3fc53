import { isSbxError } from '@sbx/core';
import type { SandboxResources } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { harnessContext } from './aio-test-context.js';
import type { Harness } from './testing/provider-harness.js';

// Without sandbox.spec.max_*, an acquire's spec may only narrow the container limits: the pids
// limit a fork bomb stops at is the operator's, never the tenant's.

const context = harnessContext();

function harness(config: Record<string, unknown> = {}): Promise<Harness> {
  return context.harness({ config });
}

async function refusal(h: Harness, resources: SandboxResources): Promise<unknown> {
  return h.provider.acquire({ userId: 'u1', threadId: 't', spec: { resources } }).then(
    () => undefined,
    (err: unknown) => err,
  );
}

describe('AIO: per-acquire resources without configured maxima', () => {
  it('attack: pids 2^31, memory 1e300 MiB or a million CPUs never reach a container', async () => {
    const h = await harness();
    const attacks: SandboxResources[] = [
      { pids: 2 ** 31 },
      { memoryMb: Number(`1e${300}`) },
      { cpus: 10 ** 6 },
    ];
    for (const resources of attacks) {
      const error = await refusal(h, resources);
      expect(isSbxError(error) && error.code, JSON.stringify(resources)).toBe('SANDBOX_SPEC');
    }
    expect(h.backend.count('create')).toBe(0);
  });

  it('attack: a spec cannot lift limits the operator set below the hardened defaults', async () => {
    const h = await harness({ aio: { limits: { pids: 256, memory_mb: 512, cpus: 1 } } });
    const wider: SandboxResources[] = [{ pids: 512 }, { memoryMb: 1024 }, { cpus: 2 }];
    for (const resources of wider) {
      const error = await refusal(h, resources);
      expect(isSbxError(error) && error.code, JSON.stringify(resources)).toBe('SANDBOX_SPEC');
    }
    const narrowed = await h.provider.acquire({
      userId: 'u1',
      threadId: 't',
      spec: { resources: { pids: 128 } },
    });
    expect(h.backend.containers.get(narrowed)?.request?.resources).toEqual({ pids: 128 });
  });

  it('a configured maximum still allows more than the container default', async () => {
    const h = await harness({ spec: { max_pids: 4096 } });
    const id = await h.provider.acquire({
      userId: 'u1',
      threadId: 't',
      spec: { resources: { pids: 2048 } },
    });
    expect(h.backend.containers.get(id)?.request?.resources).toEqual({ pids: 2048 });
  });
});
