import { loadProviderClass } from '@sbx/core';
import {
  describeProviderContract,
  describeProcessContract,
  describeSandboxContract,
  sandboxFromProvider,
} from '@sbx/core/testing';
import type { Userland } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { FakeTenkiClient } from './testing/fake-tenki-client.js';
import { tenkiConfig } from './testing/harness.js';
import { TenkiSandboxProvider, createTenkiProvider } from './tenki-provider.js';

/*
 * The shared conformance suites on the stand-in client: real commands and real files in a
 * per-sandbox directory, with the host's GNU tools and with busybox only (Tenki images are often
 * busybox-based, which is what the search protocol's portable branch is for).
 */

describeProviderContract('TenkiSandboxProvider on FakeTenkiClient', async () => {
  const client = new FakeTenkiClient();
  const provider = new TenkiSandboxProvider({ config: tenkiConfig({ replicas: 50 }), client });
  return { provider, cleanup: () => client.dispose() };
});

for (const userland of ['host', 'busybox'] as const satisfies readonly Userland[]) {
  describeSandboxContract(`TenkiSandbox on FakeTenkiClient (${userland} userland)`, async () => {
    const client = new FakeTenkiClient({ userland });
    const provider = new TenkiSandboxProvider({ config: tenkiConfig(), client });
    return sandboxFromProvider(provider, {
      threadId: `sandbox-${userland}`,
      cleanup: () => client.dispose(),
    });
  });
}

let tenkiProcessCase = 0;
// A client with the SDKs' `start` (live commands), and one with one-shot `exec` only.
for (const liveCommands of [true, false]) {
  describeProcessContract(
    `TenkiSandbox on FakeTenkiClient (${liveCommands ? 'live commands' : 'one-shot exec'})`,
    async () => {
      const client = new FakeTenkiClient({ liveCommands });
      const provider = new TenkiSandboxProvider({ config: tenkiConfig(), client });
      return sandboxFromProvider(provider, {
        threadId: `process-${++tenkiProcessCase}`,
        cleanup: () => client.dispose(),
      });
    },
  );
}

describe('provider loading', () => {
  it('`use: "@sbx/tenki"` resolves to TenkiSandboxProvider through the core loader', async () => {
    const loaded = await loadProviderClass('@sbx/tenki');
    expect(loaded.exportName).toBe('default');
    expect(loaded.kind).toBe('class');
    const provider = await loaded.create({ config: tenkiConfig() });
    expect(provider).toBeInstanceOf(TenkiSandboxProvider);
    await provider.shutdown();
    expect(createTenkiProvider({ config: tenkiConfig() })).toBeInstanceOf(TenkiSandboxProvider);
  });
});
