import type { SandboxProvider } from './sandbox-provider.js';

/**
 * The optional inspection capabilities behind `sbx ls` and `sbx gc`. They are duck-typed rather
 * than part of `SandboxProvider`: a host-directory provider has nothing to reap, and a provider
 * opts in by implementing the methods. Providers with a remote inventory (containers by label,
 * micro-VMs by metadata) implement them from the listing their orphan reconciliation already reads.
 */

/** One sandbox as an inspection shows it. Every field but `id` is optional: providers know different things. */
export interface SandboxSummary {
  readonly id: string;
  readonly userId?: string | undefined;
  readonly threadId?: string | undefined;
  /** The provider's own word: `active`, `warm`, `running`, `paused`, ... */
  readonly state?: string | undefined;
  /** ISO 8601 time of the last known activity. */
  readonly updatedAt?: string | undefined;
  /** Where it lives: a host directory, a container name, a remote template or URL. */
  readonly location?: string | undefined;
  /** The labels of the acquire spec it was created with (`sbx ls --label` filters on them). */
  readonly labels?: Readonly<Record<string, string>> | undefined;
}

export interface ListSandboxesOptions {
  signal?: AbortSignal | undefined;
}

/** The sandboxes a provider knows, including those it holds for other processes when its backend can tell. */
export interface SandboxListingProvider {
  listSandboxes(options?: ListSandboxesOptions): Promise<readonly SandboxSummary[]>;
}

export interface ReapOrphansOptions {
  /** Report what would be reaped without claiming or destroying anything. */
  dryRun?: boolean | undefined;
  signal?: AbortSignal | undefined;
}

export interface OrphanReapReport {
  /** Sandboxes destroyed (or, on a dry run, that would be). */
  readonly reaped: readonly string[];
  /** Sandboxes left alone, each with the ownership rule that kept it. */
  readonly kept: readonly { readonly id: string; readonly reason: string }[];
}

/**
 * The provider reaps with the same rules as its own reconciliation, through its ownership store: it
 * destroys only what it can claim for destroy, a lease held by a live peer keeps a sandbox, a store
 * that cannot answer counts as "owned by a peer", and an unowned sandbox goes only after its grace.
 * A caller never destroys a sandbox itself: it has no lease and no view of peers, so any rule of
 * its own could reap a live sandbox of another instance.
 */
export interface OrphanCollectingProvider {
  reapOrphans(options?: ReapOrphansOptions): Promise<OrphanReapReport>;
}

export function canListSandboxes(
  provider: SandboxProvider,
): provider is SandboxProvider & SandboxListingProvider {
  return typeof (provider as Partial<SandboxListingProvider>).listSandboxes === 'function';
}

export function canReapOrphans(
  provider: SandboxProvider,
): provider is SandboxProvider & OrphanCollectingProvider {
  return typeof (provider as Partial<OrphanCollectingProvider>).reapOrphans === 'function';
}
