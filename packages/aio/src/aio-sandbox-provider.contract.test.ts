import { describeProviderContract } from '@sbx/core/testing';
import { makeHarness } from './testing/provider-harness.js';

// The shared provider contract against the in-memory container backend (each container keeps its
// own files across clients, as a real one does).
describeProviderContract('AioSandboxProvider (in-memory backend)', async () => {
  const h = await makeHarness();
  return { provider: h.provider, cleanup: () => h.cleanup() };
});
