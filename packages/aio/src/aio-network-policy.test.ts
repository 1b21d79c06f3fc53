import { describeNetworkPolicyContract } from '@sbx/core/testing';
import { MemorySandboxBackend } from './testing/memory-sandbox-backend.js';
import { makeHarness } from './testing/provider-harness.js';

// Neither a local container backend nor a remote (provisioner) one enforces a network policy yet:
// every restricting policy is refused at acquire, never ignored.
for (const kind of ['local', 'remote'] as const) {
  describeNetworkPolicyContract(`AioSandboxProvider (${kind} backend, refuses)`, async () => {
    const h = await makeHarness({ backend: new MemorySandboxBackend({ kind }) });
    return { provider: h.provider, cleanup: () => h.cleanup() };
  });
}
