import { createHash } from 'node:crypto';
import { isValidThreadIdentity } from '@sbx/core';
import type { LeaseHolder, SandboxSpec } from '@sbx/core';
import {
  deriveSandboxScopeToken,
  identityScopesFor,
  specIdentityScope,
} from '@sbx/core/provider-kit';
import type { AgeVerdict } from '@sbx/core/provider-kit';
import type { E2BRemoteSandbox, E2BSandboxInfo } from './e2b-client.js';
import { E2B_TAGS } from './metadata.js';

/** One tree of a VM's one-shot uploads. */
export interface PlannedTree {
  readonly source: string;
  readonly dest: string;
  readonly readOnly: boolean;
  readonly kind: 'skills' | 'mount';
}

export interface ThreadKey {
  userId: string;
  threadId: string;
  /** Fingerprint of the acquire spec that changes the VM (its template); absent: the default. */
  spec?: string | undefined;
  /** The template of that spec, for a create (not recoverable from tags, and not needed then). */
  template?: string | undefined;
  /** The spec's idle timeout for a create (later read back from the VM's tag). */
  timeoutSeconds?: number | undefined;
}

/** The labels an acquire spec wrote: the VM's metadata other than sbx's own tags. */
export function specLabelsOf(info: E2BSandboxInfo): { labels?: Record<string, string> } {
  const own = new Set<string>(Object.values(E2B_TAGS));
  const labels = Object.entries(info.metadata).filter(([k]) => !own.has(k));
  return labels.length > 0 ? { labels: Object.fromEntries(labels) } : {};
}

/** A short, tag-safe fingerprint of what a spec changes about the VM. */
export function specFingerprint(spec: SandboxSpec | undefined): string | undefined {
  const scope = specIdentityScope(spec);
  return scope ? createHash('sha256').update(scope.value).digest('hex').slice(0, 16) : undefined;
}

/** The canonical-VM rule applied to one (user, thread) group of the inventory. */
export interface GroupPlan {
  /** The canonical VM found by a liveness probe, with its open connection. */
  adoptable?: { info: E2BSandboxInfo; remote: E2BRemoteSandbox };
  /** The canonical VM is one this instance tracks. */
  localCanonical?: E2BSandboxInfo;
  duplicates: E2BSandboxInfo[];
  /** Failed the liveness probe: neither canonical nor duplicate. */
  dead: E2BSandboxInfo[];
  /** Left unprobed by the time budget. */
  unprobed: E2BSandboxInfo[];
}

/** The age rule's answer, or "tracked here" (never reaped). */
export type ReapVerdict = { kind: 'tracked' } | AgeVerdict;

export type ReapKill =
  | { outcome: 'killed' | 'tracked' | 'busy' | 'refused' | 'unconfirmed' }
  | { outcome: 'unknown' | 'failed'; error: unknown };

/** One VM's fate in a `reapOrphans` look. */
export type ReapDecision =
  | { kind: 'keep'; reason: string }
  /** A duplicate inside a grace counted from this instance's first sighting. */
  | { kind: 'wait'; remainingMs: number; reason: string }
  | { kind: 'reap' };

export const SHUTDOWN_RETRY_AFTER_SECONDS = 30;

export function threadKeyText(key: ThreadKey): string {
  return `${key.userId}\u0000${key.threadId}\u0000${key.spec ?? ''}`;
}

/** Tagged VMs by (user, thread); VMs without both tags are orphans. */
export function groupByThread(entries: readonly E2BSandboxInfo[]): {
  groups: { key: ThreadKey; infos: E2BSandboxInfo[] }[];
  orphans: E2BSandboxInfo[];
} {
  const groups = new Map<string, { key: ThreadKey; infos: E2BSandboxInfo[] }>();
  const orphans: E2BSandboxInfo[] = [];
  for (const info of entries) {
    const key = taggedThread(info);
    if (key === undefined) {
      orphans.push(info);
      continue;
    }
    const text = threadKeyText(key);
    const group = groups.get(text) ?? { key, infos: [] };
    group.infos.push(info);
    groups.set(text, group);
  }
  return { groups: [...groups.values()], orphans };
}

/**
 * The thread a VM's tags name. Tags are read back from the E2B API, so they are checked like any
 * id arriving from outside: a VM whose tags break the id rule (a `:` that would make two
 * identities share a token, a path separator) belongs to no thread and is treated as an orphan,
 * never adopted into a thread that could be someone else's.
 */
export function taggedThread(info: E2BSandboxInfo): ThreadKey | undefined {
  const userId = info.metadata[E2B_TAGS.user];
  const threadId = info.metadata[E2B_TAGS.thread];
  const spec = info.metadata[E2B_TAGS.spec] || undefined;
  if (!userId || !threadId || !isValidThreadIdentity({ userId, threadId })) return undefined;
  return { userId, threadId, ...(spec ? { spec } : {}) };
}

export function isoTime(ms: number | undefined): string | undefined {
  if (ms === undefined) return undefined;
  const date = new Date(ms);
  return Number.isFinite(date.getTime()) ? date.toISOString() : undefined;
}

export function wholeSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

export function holderReason(holder: LeaseHolder): string {
  return holder.state === 'del'
    ? `being destroyed by ${holder.ownerId}`
    : `leased by ${holder.ownerId} (a live peer's lease keeps it)`;
}

/** The id seed of a thread's VM: how a warm entry is found again for its thread. */
export function threadSeed(skillsRoot: string, key: ThreadKey): string {
  return deriveSandboxScopeToken({
    userId: key.userId,
    threadId: key.threadId,
    scope: identityScopesFor({ skillsContainerPath: skillsRoot }),
  });
}
