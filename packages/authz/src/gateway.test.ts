import { InvalidArgumentError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import type { AuthorizationConfig } from './authorization-config.js';
import { GATEWAY_SYNC_LEASES, tryAcquireSandboxForRequest } from './gateway.js';
import type { GatewaySyncKind } from './gateway.js';
import { buildPrincipal } from './principal.js';
import { MemoryProvider, countingRbac, rbacConfig, recordingLogger } from './test-support.js';

const encoder = new TextEncoder();

/**
 * A host route in miniature: the primary operation (writing to the thread's host directory) always
 * happens; the sandbox sync happens only when a lease was granted, and the lease is released after
 * the last sandbox operation.
 */
async function uploadRoute(
  provider: MemoryProvider,
  role: string | null,
  hostFiles: Map<string, string>,
  kind: GatewaySyncKind = 'upload',
  config: AuthorizationConfig = rbacConfig(),
): Promise<{ status: number; synced: boolean }> {
  hostFiles.set('report.txt', 'hello');
  const logger = recordingLogger();
  const lease = await tryAcquireSandboxForRequest({
    provider,
    principal: role === null ? null : buildPrincipal({ userRole: role, userId: 'u1' }),
    threadId: 't1',
    userId: 'u1',
    kind,
    config,
    logger,
  });
  if (!lease) return { status: 200, synced: false };
  try {
    await lease.run((sandbox) =>
      sandbox.updateFile('/mnt/user-data/uploads/report.txt', encoder.encode('hello')),
    );
  } finally {
    await lease.release();
  }
  return { status: 200, synced: true };
}

describe('tryAcquireSandboxForRequest', () => {
  it('§7.28 upload with a denied role → 200, nothing acquired, host file still written', async () => {
    const provider = new MemoryProvider();
    const host = new Map<string, string>();
    expect(await uploadRoute(provider, 'guest', host)).toEqual({ status: 200, synced: false });
    expect(host.get('report.txt')).toBe('hello');
    expect(provider.acquired).toEqual([]);
  });

  it('§7.28 upload with an allowed role → acquired exactly once, synced, never parked', async () => {
    const provider = new MemoryProvider();
    expect(await uploadRoute(provider, 'admin', new Map())).toEqual({ status: 200, synced: true });
    expect(provider.acquired).toHaveLength(1);
    expect(provider.acquired[0]).toMatchObject({ threadId: 't1', userId: 'u1' });
    const [sandbox] = provider.sandboxes.values();
    expect(sandbox?.operations).toEqual(['update:/mnt/user-data/uploads/report.txt']);
    // releaseOnLast false: the upload fenced the client but did not ask for a park.
    expect(provider.released).toEqual([]);
  });

  it('§7.29 artifact update with a denied role → host update done, nothing acquired', async () => {
    const provider = new MemoryProvider();
    const host = new Map<string, string>();
    expect(await uploadRoute(provider, 'blocked', host, 'artifact')).toEqual({
      status: 200,
      synced: false,
    });
    expect(host.get('report.txt')).toBe('hello');
    expect(provider.acquired).toEqual([]);
  });

  it('artifact update with an allowed role requests normal parking on release', async () => {
    const provider = new MemoryProvider();
    await uploadRoute(provider, 'admin', new Map(), 'artifact');
    expect(provider.acquired).toHaveLength(1);
    expect(provider.released).toHaveLength(1);
  });

  it('§7.30 no resolvable user (principal null) → gate skipped, sandbox acquired once', async () => {
    const provider = new MemoryProvider();
    const { calls, resolveProvider } = countingRbac();
    const lease = await tryAcquireSandboxForRequest({
      provider,
      principal: null,
      threadId: 't1',
      kind: 'upload',
      config: rbacConfig(),
      resolveProvider,
    });
    expect(lease).toBeDefined();
    expect(calls).toEqual([]);
    expect(provider.acquired).toHaveLength(1);
    await lease!.release();
  });

  it('gates with sandbox/execute/* and owner ids carry the kind prefix', async () => {
    const provider = new MemoryProvider();
    const { calls, resolveProvider } = countingRbac();
    for (const kind of ['upload', 'artifact'] as const) {
      const lease = await tryAcquireSandboxForRequest({
        provider,
        principal: buildPrincipal({ userRole: 'user' }),
        threadId: 't1',
        kind,
        config: rbacConfig(),
        resolveProvider,
      });
      expect(lease?.ownerId).toMatch(new RegExp(`^gateway:${kind}:[0-9a-f-]{36}$`));
      await lease!.release();
    }
    expect(calls).toEqual([
      { role: 'user', resource: 'sandbox', action: 'execute', target: '*' },
      { role: 'user', resource: 'sandbox', action: 'execute', target: '*' },
    ]);
  });

  it('release is idempotent: one park for two releases', async () => {
    const provider = new MemoryProvider();
    const lease = await tryAcquireSandboxForRequest({
      provider,
      principal: buildPrincipal({ userRole: 'admin' }),
      threadId: 't1',
      kind: 'artifact',
      config: rbacConfig(),
    });
    await Promise.all([lease!.release(), lease!.release()]);
    await lease!.release();
    expect(provider.released).toHaveLength(1);
    expect(lease!.released).toBe(true);
  });

  it('authorization disabled → acquired without consulting a provider', async () => {
    const provider = new MemoryProvider();
    const { calls, resolveProvider } = countingRbac();
    const lease = await tryAcquireSandboxForRequest({
      provider,
      principal: buildPrincipal({ userRole: 'guest' }),
      threadId: 't1',
      kind: 'upload',
      config: undefined,
      resolveProvider,
    });
    expect(lease).toBeDefined();
    expect(calls).toEqual([]);
    await lease!.release();
  });

  it('an unknown kind is rejected before anything happens', async () => {
    const provider = new MemoryProvider();
    await expect(
      tryAcquireSandboxForRequest({
        provider,
        principal: null,
        threadId: 't1',
        kind: 'download' as GatewaySyncKind,
        config: undefined,
      }),
    ).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(provider.acquired).toEqual([]);
  });

  it('the lease table is fixed: uploads never park, artifacts do', () => {
    expect(GATEWAY_SYNC_LEASES).toEqual({
      upload: { ownerPrefix: 'gateway:upload', releaseOnLast: false },
      artifact: { ownerPrefix: 'gateway:artifact', releaseOnLast: true },
    });
  });
});
