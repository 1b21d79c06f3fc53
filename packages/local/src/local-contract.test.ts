import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '@sbx/core';
import {
  describeProcessContract,
  describeProviderContract,
  describeSandboxContract,
} from '@sbx/core/testing';
import { LocalSandboxProvider } from './local-sandbox-provider.js';
import { confinementForTests } from './confinement/confinement-test-support.js';

async function makeProvider() {
  const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-contract-'));
  const provider = new LocalSandboxProvider({
    baseDir,
    isolation: 'none',
    allowHostBash: true,
    logger: silentLogger,
  });
  return { provider, cleanup: () => rm(baseDir, { recursive: true, force: true }) };
}

describeSandboxContract('LocalSandbox', async () => {
  const { provider, cleanup } = await makeProvider();
  const sandbox = provider.get(
    await provider.acquire({ userId: 'contract', threadId: 'sandbox' }),
  )!;
  return { sandbox, workdir: '/mnt/user-data/workspace', cleanup };
});

describeProviderContract('LocalSandboxProvider', makeProvider);

let processThreads = 0;
describeProcessContract(
  'LocalSandbox',
  async () => {
    const { provider, cleanup } = await makeProvider();
    const sandbox = provider.get(
      await provider.acquire({ userId: 'contract', threadId: `process-${++processThreads}` }),
    )!;
    return { sandbox, workdir: '/mnt/user-data/workspace', cleanup };
  },
  { captureLimitBytes: 10 * 1024 * 1024 },
);

// The same suites with every command confined (bubblewrap namespaces, no allowHostBash).
const confinable = process.platform === 'linux' && confinementForTests();

async function makeConfinedProvider() {
  const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-contract-confined-'));
  const provider = new LocalSandboxProvider({ baseDir, isolation: 'bwrap', logger: silentLogger });
  return {
    provider,
    cleanup: async () => {
      await provider.shutdown();
      await rm(baseDir, { recursive: true, force: true });
    },
  };
}

if (confinable) {
  describeSandboxContract('LocalSandbox (confined)', async () => {
    const { provider, cleanup } = await makeConfinedProvider();
    const sandbox = provider.get(
      await provider.acquire({ userId: 'contract', threadId: 'sandbox' }),
    )!;
    return { sandbox, workdir: '/mnt/user-data/workspace', cleanup };
  });

  describeProviderContract('LocalSandboxProvider (confined)', makeConfinedProvider);

  let confinedThreads = 0;
  describeProcessContract(
    'LocalSandbox (confined)',
    async () => {
      const { provider, cleanup } = await makeConfinedProvider();
      const sandbox = provider.get(
        await provider.acquire({ userId: 'contract', threadId: `process-${++confinedThreads}` }),
      )!;
      return { sandbox, workdir: '/mnt/user-data/workspace', cleanup };
    },
    { captureLimitBytes: 10 * 1024 * 1024 },
  );
}
