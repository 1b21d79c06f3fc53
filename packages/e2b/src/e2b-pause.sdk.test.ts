import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MemoryOwnershipStore, parseSandboxConfig } from '@sbx/core';
import { describeLifecycleContract, rejectionOf } from '@sbx/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { E2BSandboxProvider } from './e2b-sandbox-provider.js';
import { SdkE2BClient } from './sdk-client.js';
import { E2BStandinServer } from './testing/e2b-standin-server.js';

// Pause and resume through the real `e2b` SDK (2.51) against the HTTP stand-in, which answers its
// pause route as the service does (204, 409 when already paused, 404 when gone), resumes a paused
// VM on connect, and leaves envd unreachable while paused.

describeLifecycleContract('E2BSandboxProvider over the real SDK and the stand-in', async () => {
  const standin = await new E2BStandinServer().start();
  const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-sdk-lifecycle-'));
  const provider = new E2BSandboxProvider({
    config: parseSandboxConfig({
      use: '@sbx/e2b',
      base_dir: baseDir,
      replicas: 32,
      e2b: { api_key: standin.apiKey, api_url: standin.url, sandbox_url: standin.url },
    }),
    ownershipStore: new MemoryOwnershipStore(),
    capacityStore: null,
  });
  return {
    provider,
    cleanup: async () => {
      await standin.stop();
      await rm(baseDir, { recursive: true, force: true });
    },
  };
});

describe('SdkE2BClient.pause against the stand-in', () => {
  let server: E2BStandinServer;
  let client: SdkE2BClient;
  beforeAll(async () => {
    server = await new E2BStandinServer().start();
    client = new SdkE2BClient({
      apiKey: server.apiKey,
      apiUrl: server.url,
      sandboxUrl: server.url,
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('answers true, then false when already paused; calls fail until connect resumes it', async () => {
    const vm = await client.create({ template: 'base', metadata: { t: 'pause' } });
    await vm.files.write('/tmp/kept.txt', 'kept\n');
    expect(await client.pause(vm.sandboxId)).toBe(true);
    expect(await client.pause(vm.sandboxId)).toBe(false);
    expect(await rejectionOf(vm.files.read('/tmp/kept.txt'))).toBeInstanceOf(Error);
    const listed = await client.list({ query: { metadata: { t: 'pause' } } }).nextItems();
    expect(listed.map((i) => i.state)).toEqual(['paused']);
    const again = await client.connect(vm.sandboxId);
    expect(await again.files.read('/tmp/kept.txt')).toBe('kept\n');
  });

  it('a gone sandbox is SandboxNotFoundError', async () => {
    const vm = await client.create({ template: 'base', metadata: {} });
    await vm.kill();
    expect(((await rejectionOf(client.pause(vm.sandboxId))) as Error).name).toBe(
      'SandboxNotFoundError',
    );
  });
});
