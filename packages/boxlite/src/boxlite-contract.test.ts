import { loadProviderClass } from '@sbx/core';
import {
  describeProviderContract,
  describeProcessContract,
  describeSandboxContract,
  sandboxFromProvider,
} from '@sbx/core/testing';
import type { Userland } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { BoxliteProvider, createBoxliteProvider } from './boxlite-provider.js';
import { FakeBoxliteRuntime } from './testing/fake-boxlite-runtime.js';
import { boxliteConfig } from './testing/harness.js';

/*
 * The shared conformance suites, on the stand-in runtime: real commands in a per-box directory,
 * once with the host's GNU tools and once with busybox only (the search protocol has a busybox
 * branch, and slim VM images often have nothing else).
 */

describeProviderContract('BoxliteProvider on FakeBoxliteRuntime', async () => {
  const runtime = new FakeBoxliteRuntime();
  const provider = new BoxliteProvider({ config: boxliteConfig({ replicas: 50 }), runtime });
  return { provider, cleanup: () => runtime.dispose() };
});

for (const userland of ['host', 'busybox'] as const satisfies readonly Userland[]) {
  describeSandboxContract(
    `BoxliteSandbox on FakeBoxliteRuntime (${userland} userland)`,
    async () => {
      const runtime = new FakeBoxliteRuntime({ userland });
      const provider = new BoxliteProvider({ config: boxliteConfig(), runtime });
      return sandboxFromProvider(provider, {
        threadId: `sandbox-${userland}`,
        cleanup: () => runtime.dispose(),
      });
    },
  );
}

let boxliteProcessCase = 0;
describeProcessContract('BoxliteSandbox on FakeBoxliteRuntime', async () => {
  const runtime = new FakeBoxliteRuntime();
  const provider = new BoxliteProvider({ config: boxliteConfig(), runtime });
  return sandboxFromProvider(provider, {
    threadId: `process-${++boxliteProcessCase}`,
    cleanup: () => runtime.dispose(),
  });
});

describe('provider loading', () => {
  it('`use: "@sbx/boxlite"` resolves to BoxliteProvider through the core loader', async () => {
    const loaded = await loadProviderClass('@sbx/boxlite');
    expect(loaded.exportName).toBe('default');
    expect(loaded.kind).toBe('class');
    const runtime = new FakeBoxliteRuntime();
    const provider = await loaded.create({ config: boxliteConfig() });
    expect(provider).toBeInstanceOf(BoxliteProvider);
    await provider.shutdown();
    expect(createBoxliteProvider({ config: boxliteConfig(), runtime })).toBeInstanceOf(
      BoxliteProvider,
    );
    await runtime.dispose();
  });
});
