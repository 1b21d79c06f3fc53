import type { SandboxProvider } from '../contract/sandbox-provider.js';
import type { SandboxUnderTest } from './sandbox-contract.js';

export interface SandboxFromProviderOptions {
  /** The thread the sandbox is acquired for (as user `contract`); distinct per suite. */
  readonly threadId: string;
  /** Runs after the provider's shutdown, e.g. to stop the fake backend the provider talked to. */
  readonly cleanup?: () => Promise<void>;
}

/**
 * The subject of `describeSandboxContract` for a provider-made sandbox: one acquired for a thread,
 * the way the tools get theirs (so its bootstrap ran and `/mnt/user-data/workspace` exists). Its
 * cleanup shuts the provider down before `cleanup` runs: a backend stopped first would turn the
 * provider's teardown into a stream of connection errors.
 */
export async function sandboxFromProvider(
  provider: SandboxProvider,
  options: SandboxFromProviderOptions,
): Promise<SandboxUnderTest> {
  const id = await provider.acquire({ userId: 'contract', threadId: options.threadId });
  const sandbox = provider.get(id);
  if (sandbox === undefined) throw new Error(`acquired sandbox ${id} is not registered`);
  return {
    sandbox,
    workdir: '/mnt/user-data/workspace',
    cleanup: async () => {
      await provider.shutdown();
      await options.cleanup?.();
    },
  };
}
