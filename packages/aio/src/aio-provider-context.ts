import { getSandboxLeaseManager } from '@sbx/core';
import { Sightings } from '@sbx/core/provider-kit';
import type { SandboxProviderEventEmitter } from '@sbx/core/provider-kit';
import type { Clock, IdleTeardownReservation, LeaseProvider, Logger, Sandbox } from '@sbx/core';
import type { OwnershipClient, OwnershipLink } from '@sbx/core/provider-kit';
import { checkSandboxHealth, closeSandboxClient, defaultReadiness } from './aio-backend-hooks.js';
import type { AioSettings } from './aio-provider-config.js';
import type { AioBook } from './aio-identity.js';
import type { SandboxBackend, SandboxHealth } from './sandbox-backend.js';
import type { SandboxInfo } from './sandbox-info.js';

/**
 * What the AIO provider's collaborators (acquire paths, teardown, renewal, reconciler) share: the
 * book, the ownership client and the provider's settings and hooks. They get this, never the
 * provider itself, so each one's reach is what is written here.
 */
export interface AioProviderContext {
  readonly settings: AioSettings;
  readonly backend: SandboxBackend;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly events: SandboxProviderEventEmitter;
  readonly book: AioBook;
  /** Lease TTL in ms: also the adoption grace. */
  readonly leaseTtlMs: number;
  /** The ownership renewal interval in ms: how long a parked sandbox's absent lease is left. */
  readonly renewalIntervalMs: number;
  /**
   * When a renewal first found the lease of a sandbox this instance only parks absent (see
   * `renewLease`): re-established only once it is still absent one renewal interval later.
   */
  readonly parkedLapses: Sightings;
  /**
   * Ids whose renewal heard `LOST` (a peer holds the lease) while the entry could not be
   * forgotten (a reaper held it). A later claim of such an id by a reaper must not be taken as
   * leave to stop it: after a store flush the peer's lease is simply absent, so the claim would
   * be granted and the container stopped under the peer's running command. The reaper forgets
   * the entry instead; the container stays with the peer.
   */
  readonly supersededHere: Set<string>;
  /**
   * Ids this instance paused (see `AioPauses`): `get` does not hand them out and an acquire
   * resumes them. The container's own state is the record every instance reads; this is only
   * this instance's knowledge of its own pauses, so `get` stays a pure in-memory lookup.
   */
  readonly paused: Set<string>;
  /** The ownership client; throws before the store is up (every caller awaits it first). */
  ownership(): OwnershipClient;
  /** The ownership client if the store is up. */
  ownershipIfReady(): OwnershipClient | undefined;
  /** Shut down: background work ends early. */
  isClosed(): boolean;
  createClient(info: SandboxInfo): Sandbox;
  readinessProbe(info: SandboxInfo): Promise<boolean>;
  /** Unknown is not dead: a failed check keeps the sandbox (the next check corrects it). */
  checkHealth(info: SandboxInfo): Promise<SandboxHealth>;
  closeClient(client: Sandbox, id: string, during: string): Promise<void>;
  /** The execution-lease manager's idle-teardown reservation (refused while a turn holds it). */
  tryReserveIdleTeardown(id: string): IdleTeardownReservation | undefined;
}

export interface AioContextParts {
  readonly settings: AioSettings;
  readonly backend: SandboxBackend;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly events: SandboxProviderEventEmitter;
  readonly book: AioBook;
  readonly leaseTtlMs: number;
  readonly renewalIntervalMs: number;
  readonly link: () => OwnershipLink;
  readonly isClosed: () => boolean;
  readonly createClient: (info: SandboxInfo) => Sandbox;
  readonly readinessProbe: ((info: SandboxInfo) => Promise<boolean>) | undefined;
  /** The provider: the execution-lease manager is bound to it. */
  readonly leaseOwner: LeaseProvider;
}

export function createAioContext(parts: AioContextParts): AioProviderContext {
  const { backend, settings, logger } = parts;
  return {
    settings,
    backend,
    logger,
    clock: parts.clock,
    events: parts.events,
    book: parts.book,
    leaseTtlMs: parts.leaseTtlMs,
    renewalIntervalMs: parts.renewalIntervalMs,
    parkedLapses: new Sightings(),
    supersededHere: new Set<string>(),
    paused: new Set<string>(),
    ownership: () => parts.link().client,
    ownershipIfReady: () => parts.link().clientIfReady,
    isClosed: parts.isClosed,
    createClient: parts.createClient,
    readinessProbe:
      parts.readinessProbe ?? ((info) => defaultReadiness(backend, settings, info, logger)),
    checkHealth: (info) => checkSandboxHealth(backend, info, logger),
    closeClient: (client, id, during) => closeSandboxClient(client, id, during, logger),
    tryReserveIdleTeardown: (id) =>
      getSandboxLeaseManager(parts.leaseOwner, { logger }).tryReserveIdleTeardown(id),
  };
}
