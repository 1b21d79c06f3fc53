import type { AcquirePath, CapacityStore, Clock, Logger, ResolvedOwnershipConfig } from '@sbx/core';
import type { AcquireSerializer, SandboxProviderEventEmitter } from '@sbx/core/provider-kit';
import type { OwnershipClient, SandboxBook, Sightings } from '@sbx/core/provider-kit';
import type { E2BClient, E2BRemoteSandbox } from './e2b-client.js';
import type { E2BSettings } from './e2b-config.js';
import type { E2BSandbox } from './e2b-sandbox.js';
import type { LocalSlots } from './local-slots.js';
import type { ThreadKey } from './e2b-thread-key.js';

export interface ActiveEntry {
  sandbox: E2BSandbox;
  key: ThreadKey | undefined;
  seed: string | undefined;
}

export interface WarmValue {
  seed: string;
  key: ThreadKey;
}

export type E2BBook = SandboxBook<ActiveEntry, WarmValue>;

/** The stores, opened on first use: the ownership client and the optional capacity ledger. */
export interface Stores {
  ownership: OwnershipClient;
  capacity: CapacityStore | undefined;
  ledgerKey: string | undefined;
  ownsOwnership: boolean;
  ownsCapacity: boolean;
}

/**
 * What the E2B provider's collaborators (acquire paths, capacity, teardown and renewal,
 * reconciler, inspection) share. They get this, never the provider itself.
 *
 * Where an id stands is the book's `stateOf`: active, warm, or (through `extraState`) a tombstone
 * (its kill unconfirmed, its slot still counted) or in flight (a create, reclaim or adoption
 * between tracked states, in `ownedRemoteOps` when the lease is ours and shutdown kills it, in
 * `unownedRemoteOps` when a peer may own it and shutdown only forgets it).
 */
export interface E2BProviderContext {
  readonly settings: E2BSettings;
  readonly ownershipConfig: ResolvedOwnershipConfig;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly client: E2BClient;
  readonly events: SandboxProviderEventEmitter;
  /** The acquire serializer; also the bounded pool of SDK lifecycle calls. */
  readonly serializer: AcquireSerializer;
  readonly book: E2BBook;
  readonly slots: LocalSlots;
  readonly ownedRemoteOps: Set<string>;
  readonly unownedRemoteOps: Set<string>;
  /** Ids a reaping path of this instance is killing (reconciliation and `reapOrphans`). */
  readonly reaping: Set<string>;
  /** VMs whose acquire spec set their idle timeout (seconds), by id. */
  readonly vmTimeouts: Map<string, number>;
  /** First sightings of untracked VMs, for the reaping grace. */
  readonly firstSeen: Sightings;
  stores(): Promise<Stores>;
  /** The ownership client if the stores are open (shutdown's synchronous snapshot). */
  clientIfReady(): OwnershipClient | undefined;
  ready(): Promise<void>;
  /** `reset()` or `shutdown()` began: start nothing new, stop waiting for capacity. */
  isClosed(): boolean;
  /**
   * `shutdown()` began: a VM an operation in flight produces from now on is killed, since the
   * shutdown sweep may have missed it. (`reset()` lets those operations finish and hands over.)
   */
  isShuttingDown(): boolean;
  assertOpen(): void;
  /** The reconciliation pass in flight, if any. */
  reconciling(): Promise<unknown> | undefined;
  /** Wakes the capacity waiters: a slot may have freed. */
  notify(): void;
  /** `notify` after the warm pool removed the entry (it does so right after its hook). */
  notifySoon(): void;
  acquired(sandboxId: string, path: AcquirePath): string;
  adapter(id: string, remote: E2BRemoteSandbox): E2BSandbox;
  /** One SDK lifecycle call inside the bounded pool (directly after shutdown). */
  sdk<T>(fn: () => Promise<T>): Promise<T>;
  connectOptions(): { timeoutMs?: number };
  seedOf(key: ThreadKey): string;
  /** Anything tracked here, in flight included. */
  isTrackedLocally(id: string): boolean;
}
