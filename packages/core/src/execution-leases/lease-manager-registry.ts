import { SandboxLeaseManager } from './lease-manager.js';
import type { LeaseProvider, SandboxLeaseManagerOptions } from './lease-types.js';

// The one lease manager of each provider: every caller that leases a provider's sandboxes must
// share its bookkeeping, or two holders of one sandbox would each think they are the last.
// Keyed by the provider object itself: never by equality or a derived hash, so two equal-looking
// providers stay separate and any object works. A WeakMap also lets a dropped provider's manager
// go with it.
const managers = new WeakMap<object, SandboxLeaseManager>();

/** The one lease manager of `provider` (created on first use). */
export function getSandboxLeaseManager(
  provider: LeaseProvider,
  options: SandboxLeaseManagerOptions = {},
): SandboxLeaseManager {
  let manager = managers.get(provider);
  if (manager === undefined) {
    manager = new SandboxLeaseManager(provider, options);
    managers.set(provider, manager);
  }
  return manager;
}

/**
 * Forgets `provider`'s manager and closes it. Call it when the provider is reset, shut down or
 * replaced. Returns whether there was one.
 */
export function discardSandboxLeaseManager(provider: LeaseProvider): boolean {
  const manager = managers.get(provider);
  if (manager === undefined) return false;
  managers.delete(provider);
  manager.close();
  return true;
}
