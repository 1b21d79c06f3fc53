import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MemoryOwnershipStore, parseSandboxConfig } from '@sbx/core';
import { describeNetworkPolicyContract } from '@sbx/core/testing';
import { E2BSandboxProvider } from './e2b-sandbox-provider.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

// E2B does not enforce a network policy yet: every restricting one is refused at acquire.
describeNetworkPolicyContract('E2BSandboxProvider over FakeE2BClient (refuses)', async () => {
  const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-netpolicy-'));
  const fake = new FakeE2BClient();
  const provider = new E2BSandboxProvider({
    config: parseSandboxConfig({ use: '@sbx/e2b', base_dir: baseDir, replicas: 32 }),
    client: fake,
    ownershipStore: new MemoryOwnershipStore(),
    capacityStore: null,
  });
  return {
    provider,
    cleanup: async () => {
      await fake.dispose();
      await rm(baseDir, { recursive: true, force: true });
    },
  };
});
