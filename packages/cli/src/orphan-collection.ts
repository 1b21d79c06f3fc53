import type { SandboxProvider } from '@sbx/core';

export interface ReapOrphansOptions {
  /** Report what would be reaped without touching anything. */
  dryRun?: boolean;
  signal?: AbortSignal;
}

export interface OrphanReapReport {
  /** Sandboxes destroyed (or, on a dry run, that would be). */
  readonly reaped: readonly string[];
  /** Sandboxes left alone, each with the ownership rule that kept it. */
  readonly kept: readonly { readonly id: string; readonly reason: string }[];
}

/**
 * Optional provider capability behind `sbx gc`. The provider reaps with the same rules as its own
 * reconciliation, through its ownership store: it destroys only what it can claim for destroy, a
 * lease held by a live peer keeps a sandbox, a store that cannot answer counts as "owned by a
 * peer", and an unowned sandbox is adopted only after the recovery grace. The CLI never destroys a
 * sandbox itself: it has no lease and no view of peers, so any rule of its own could reap a live
 * sandbox of another instance.
 *
 * Duck-typed like `listSandboxes`; the container and micro-VM providers are meant to implement it on
 * top of their orphan reconciliation.
 */
export interface OrphanCollectingProvider {
  reapOrphans(options?: ReapOrphansOptions): Promise<OrphanReapReport>;
}

export function canReapOrphans(
  provider: SandboxProvider,
): provider is SandboxProvider & OrphanCollectingProvider {
  return typeof (provider as Partial<OrphanCollectingProvider>).reapOrphans === 'function';
}
