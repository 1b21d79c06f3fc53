import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import {
  AcquireSerializer,
  CapacityReserveOutcome,
  ProviderClosedError,
  RenewOutcome,
  SandboxBeingDestroyedError,
  SandboxCapacityExceededError,
  SandboxNotFoundError,
  SandboxProvider,
  SandboxRuntimeError,
  SerializerClosedError,
  WarmPool,
  createCapacityStore,
  createOwnershipStore,
  deriveSandboxScopeToken,
  specIdentityScope,
  type SandboxSpec,
  type SandboxSpecPolicy,
  type SandboxSpecSupport,
  identityScopesFor,
  resolveEffectiveUserId,
  resolveOwnershipConfig,
  serializerKey,
  silentLogger,
  systemClock,
  threadLayout,
  withHeldTeardownLease,
  throwIfAborted,
  sleep,
  SandboxProviderEventEmitter,
} from '@sbx/core';
import {
  DEFAULT_SKILLS_ROOT,
  SKILL_CATEGORIES,
  DEFAULT_SPEC_POLICY,
  checkSandboxSpec,
  sharedSkillsViewPath,
} from '@sbx/core/internal';
import type {
  AcquireOptions,
  AcquirePath,
  CapacityStore,
  SandboxProviderEventListener,
  ListSandboxesOptions,
  OrphanReapReport,
  ReapOrphansOptions,
  SandboxSummary,
  Clock,
  ClockTimer,
  LeaseHolder,
  Logger,
  OwnershipStore,
  ResolvedOwnershipConfig,
  SandboxConfig,
  SyncAgentSkillsOptions,
  WarmEntry,
  WarmPoolDestroyReason,
} from '@sbx/core';
import { runBootstrap } from './bootstrap.js';
import type { E2BClient, E2BRemoteSandbox, E2BSandboxInfo } from './e2b-client.js';
import { reservationMaxAgeMs, resolveE2BSettings } from './e2b-config.js';
import type { E2BSettings } from './e2b-config.js';
import { errorMessage, isSandboxGoneError } from './e2b-errors.js';
import { E2BSandbox } from './e2b-sandbox.js';
import { LocalSlots } from './local-slots.js';
import type { Slot } from './local-slots.js';
import {
  E2B_PROVIDER_TAG_VALUE,
  E2B_TAGS,
  belongsToLedger,
  buildVmMetadata,
  compareCandidates,
  createdAtMs,
  skillsRootOf,
  specTimeoutOf,
} from './metadata.js';
import { syncOutputs } from './output-sync.js';
import { listRemoteInventory } from './remote-inventory.js';
import type { RemoteInventory } from './remote-inventory.js';
import { SdkE2BClient } from './sdk-client.js';
import { syncSkillsInto } from './skill-sync.js';
import { UploadPass, uploadTree } from './tree-upload.js';

export interface E2BProviderInit {
  readonly config: SandboxConfig;
  readonly logger?: Logger | undefined;
  /** The E2B port; default the real SDK (`SdkE2BClient`) with the configured connection. */
  readonly client?: E2BClient | undefined;
  /** Default: built from `sandbox.ownership` (memory, or Redis via @sbx/ownership-redis). */
  readonly ownershipStore?: OwnershipStore | undefined;
  /**
   * Default: the deployment-wide ledger for a Redis ownership backend, none for memory. Pass
   * `null` to force the per-process limit.
   */
  readonly capacityStore?: CapacityStore | null | undefined;
  /** Tag value naming the ledger on VMs; default `<ownership key prefix>:e2b-capacity`. */
  readonly capacityLedgerKey?: string | undefined;
  /** Drives timeouts, renewal, reconciliation and the warm-pool idle checker. */
  readonly clock?: Clock | undefined;
  /** Start the startup reconciliation pass and the timers. Default true. */
  readonly background?: boolean | undefined;
  /** Environment for resolving the ownership configuration. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
}

export interface ReconciliationStats {
  discovered: number;
  adopted: number;
  duplicates: number;
  deferred: number;
  killed: number;
  dead: number;
  budgetExhausted: boolean;
}

/** Local capacity accounting, for diagnostics and tests. */
export interface E2BCapacitySnapshot {
  limit: number;
  active: number;
  warm: number;
  reserved: number;
  transitioning: number;
  tombstones: number;
  total: number;
}

/**
 * One listed VM (core's `SandboxSummary`). User and thread come from the VM's tags (or this
 * instance's record); `state` is `active` / `warm` when this instance tracks it, else the control
 * plane's (`running`, `paused`); `updatedAt` is when a warm VM was parked, else its creation tag
 * (else its start time); `location` is `e2b:<template>`.
 */
export type E2BSandboxSummary = SandboxSummary;

export type E2BListSandboxesOptions = ListSandboxesOptions;

export interface E2BReapOrphansOptions extends ReapOrphansOptions {
  /**
   * A duplicate's grace counts from this instance's first sighting, so a fresh process sees every
   * duplicate inside it. By default the call waits the rest of that grace (on the provider's
   * clock) and looks again; `false` takes one look and keeps such duplicates with that reason.
   */
  waitForGrace?: boolean | undefined;
}

export type E2BOrphanReapReport = OrphanReapReport;

/** One tree of a VM's one-shot uploads. */
interface PlannedTree {
  readonly source: string;
  readonly dest: string;
  readonly readOnly: boolean;
  readonly kind: 'skills' | 'mount';
}

interface ThreadKey {
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
function specLabelsOf(info: E2BSandboxInfo): { labels?: Record<string, string> } {
  const own = new Set<string>(Object.values(E2B_TAGS));
  const labels = Object.entries(info.metadata).filter(([k]) => !own.has(k));
  return labels.length > 0 ? { labels: Object.fromEntries(labels) } : {};
}

/** A short, tag-safe fingerprint of what a spec changes about the VM. */
function specFingerprint(spec: SandboxSpec | undefined): string | undefined {
  const scope = specIdentityScope(spec);
  return scope ? createHash('sha256').update(scope.value).digest('hex').slice(0, 16) : undefined;
}

interface ActiveEntry {
  sandbox: E2BSandbox;
  key: ThreadKey | undefined;
  seed: string | undefined;
}

interface WarmValue {
  seed: string;
  key: ThreadKey;
}

interface Stores {
  ownership: OwnershipStore;
  capacity: CapacityStore | undefined;
  ledgerKey: string | undefined;
  ownsOwnership: boolean;
  ownsCapacity: boolean;
}

/** The canonical-VM rule applied to one (user, thread) group of the inventory. */
interface GroupPlan {
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

type ReapVerdict =
  | { kind: 'tracked' }
  | { kind: 'young'; ageMs: number; graceMs: number; from: 'created' | 'seen' }
  | { kind: 'due' };

type ReapKill =
  | { outcome: 'killed' | 'tracked' | 'busy' | 'refused' | 'unconfirmed' }
  | { outcome: 'unknown' | 'failed'; error: unknown };

/** One VM's fate in a `reapOrphans` look. */
type ReapDecision =
  | { kind: 'keep'; reason: string }
  /** A duplicate inside a grace counted from this instance's first sighting. */
  | { kind: 'wait'; remainingMs: number; reason: string }
  | { kind: 'reap' };

const SHUTDOWN_RETRY_AFTER_SECONDS = 30;

function threadKeyText(key: ThreadKey): string {
  return `${key.userId}\u0000${key.threadId}\u0000${key.spec ?? ''}`;
}

/** Tagged VMs by (user, thread); VMs without both tags are orphans. */
function groupByThread(entries: readonly E2BSandboxInfo[]): {
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

function taggedThread(info: E2BSandboxInfo): ThreadKey | undefined {
  const userId = info.metadata[E2B_TAGS.user];
  const threadId = info.metadata[E2B_TAGS.thread];
  const spec = info.metadata[E2B_TAGS.spec] || undefined;
  return userId && threadId ? { userId, threadId, ...(spec ? { spec } : {}) } : undefined;
}

function isoTime(ms: number | undefined): string | undefined {
  if (ms === undefined) return undefined;
  const date = new Date(ms);
  return Number.isFinite(date.getTime()) ? date.toISOString() : undefined;
}

function wholeSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

function holderReason(holder: LeaseHolder): string {
  return holder.state === 'del'
    ? `being destroyed by ${holder.ownerId}`
    : `leased by ${holder.ownerId} (a live peer's lease keeps it)`;
}

/**
 * E2B micro-VM provider: one VM per (user, thread), parked warm between turns, capacity limited per
 * process or — with Redis ownership — across the deployment through the shared capacity ledger.
 * See the package README for the lifecycle, capacity policies and reconciliation.
 */
export class E2BSandboxProvider extends SandboxProvider {
  readonly settings: E2BSettings;
  readonly ownership: ResolvedOwnershipConfig;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #client: E2BClient;
  readonly #serializer: AcquireSerializer;
  readonly #init: E2BProviderInit;
  #stores: Promise<Stores> | undefined;
  readonly #active = new Map<string, ActiveEntry>();
  readonly #threads = new Map<string, string>();
  readonly #warm: WarmPool<WarmValue>;
  readonly #slots: LocalSlots;
  /** Remote ids between tracked states that we own: shutdown kills them. */
  readonly #ownedRemoteOps = new Set<string>();
  /** Remote ids found by discovery/reconciliation that a peer may own: shutdown only forgets them. */
  readonly #unownedRemoteOps = new Set<string>();
  /** Leases this instance holds. */
  readonly #owned = new Set<string>();
  /**
   * Ids whose `del:` marker a teardown heartbeat keeps. Renewal skips them (`renew` would see the
   * marker, not an `own:` lease, and forget a VM mid-kill); they stay in `#owned` so a shutdown
   * that starts meanwhile still counts them as ours to kill.
   */
  readonly #tearingDown = new Set<string>();
  /** Intent marks: an acquire is publishing ownership of the id; renewal must not forget it. */
  readonly #intent = new Set<string>();
  readonly #firstSeen = new Map<string, number>();
  /** Ids a reaping path of this instance is killing (reconciliation and `reapOrphans`). */
  readonly #reaping = new Set<string>();
  readonly #waiters = new Set<() => void>();
  /** VMs whose acquire spec set their idle timeout (seconds), by id. */
  readonly #vmTimeouts = new Map<string, number>();
  readonly #events: SandboxProviderEventEmitter;
  #closed = false;
  #shutdown: Promise<void> | undefined;
  #renewTimer: ClockTimer | undefined;
  #reconcileTimer: ClockTimer | undefined;
  #reconciling: Promise<ReconciliationStats> | undefined;
  #startup: Promise<unknown> | undefined;

  constructor(init: E2BProviderInit) {
    super();
    this.#init = init;
    this.#logger = init.logger ?? silentLogger;
    this.#events = new SandboxProviderEventEmitter({ logger: this.#logger });
    this.#clock = init.clock ?? systemClock;
    this.settings = resolveE2BSettings(init.config, this.#logger);
    this.ownership = resolveOwnershipConfig(init.config, init.env ?? process.env);
    if (!this.settings.apiKey && init.client === undefined) {
      this.#logger.warn(
        'E2BSandboxProvider: no api_key in sandbox.e2b and E2B_API_KEY is unset; the first acquire will fail',
      );
    }
    this.#client =
      init.client ??
      new SdkE2BClient({
        apiKey: this.settings.apiKey,
        domain: this.settings.domain,
        apiUrl: this.settings.apiUrl,
        sandboxUrl: this.settings.sandboxUrl,
        requestTimeoutMs: this.settings.requestTimeoutMs,
      });
    this.#serializer = new AcquireSerializer({
      limit: this.settings.sdkConcurrency,
      name: 'e2b-sandbox-acquire',
      logger: this.#logger,
    });
    this.#slots = new LocalSlots(() => this.#notify());
    this.#warm = new WarmPool<WarmValue>({
      destroy: (entry, reason) => this.#destroyWarm(entry, reason),
      idleTimeoutSeconds: this.settings.idleTimeoutSeconds,
      checkIntervalSeconds: init.config.warmPool.idleCheckIntervalSeconds,
      replicas: this.settings.capacityLimit,
      clock: this.#clock,
      logger: this.#logger,
      name: 'e2b',
    });
    if (init.background ?? true) {
      this.#startup = this.#stores_().then(
        () => this.#startBackground(),
        (error: unknown) =>
          this.#logger.error('E2BSandboxProvider: ownership/capacity stores failed to start', {
            error: errorMessage(error),
          }),
      );
    }
  }

  override get supportsAgentSkillIsolation(): boolean {
    return true;
  }

  /**
   * The template (`image`, from `sandbox.spec.images`) is part of how a thread's VM is found again
   * (the `sbx_spec` tag); labels become VM metadata; `timeoutSeconds` is the VM's idle timeout
   * (E2B's own), kept in a tag so every instance renews it with that value, not the default.
   */
  override get specSupport(): SandboxSpecSupport {
    return { image: true, resources: [], timeout: true, labels: true };
  }

  protected override get specPolicy(): SandboxSpecPolicy {
    return this.#init.config.specPolicy ?? DEFAULT_SPEC_POLICY;
  }

  /** Resolves once the stores are up and the startup reconciliation was started (not finished). */
  async ready(): Promise<void> {
    await this.#stores_();
    await this.#startup;
  }

  /** The owner id written into leases and the `deer_flow_gateway` tag. */
  async ownerId(): Promise<string> {
    return (await this.#stores_()).ownership.ownerId;
  }

  capacitySnapshot(): E2BCapacitySnapshot {
    const s = this.#slots;
    return {
      limit: this.settings.capacityLimit,
      active: this.#active.size,
      warm: this.#warm.size,
      reserved: s.reserved,
      transitioning: s.transitioning,
      tombstones: s.tombstones.size,
      total: this.#total(),
    };
  }

  /** Ids parked warm, oldest first. */
  warmIds(): string[] {
    return this.#warm.ids();
  }

  /** Ids whose destruction is unconfirmed. */
  tombstoneIds(): string[] {
    return [...this.#slots.tombstones.keys()];
  }

  /** Owned remote ids in flight (shutdown kills them). */
  remoteOpIds(): string[] {
    return [...this.#ownedRemoteOps];
  }

  ownsLease(id: string): boolean {
    return this.#owned.has(id);
  }

  get isShutdown(): boolean {
    return this.#closed;
  }

  // ------------------------------------------------------------------------------------------
  // lifecycle

  override get(sandboxId: string): E2BSandbox | undefined {
    return this.#active.get(sandboxId)?.sandbox;
  }

  override async acquire(options: AcquireOptions = {}): Promise<string> {
    this.#assertOpen();
    this.admit(options);
    await this.#stores_();
    this.#assertOpen();
    const uploadShared = options.skillPolicy === undefined;
    const labels = options.spec?.labels;
    if (options.threadId === undefined) {
      // A thread-less sandbox has no identity to find it again by: never serialized, never reused.
      return this.#acquired(await this.#create(undefined, uploadShared, labels), 'create');
    }
    const spec = checkSandboxSpec(
      options.spec,
      this.specSupport,
      this.specPolicy,
      'E2BSandboxProvider',
    );
    const fingerprint = specFingerprint(spec);
    const key: ThreadKey = {
      userId: resolveEffectiveUserId(options.userId),
      threadId: options.threadId,
      ...(fingerprint ? { spec: fingerprint } : {}),
      ...(spec?.image ? { template: spec.image } : {}),
      ...(spec?.timeoutSeconds !== undefined ? { timeoutSeconds: spec.timeoutSeconds } : {}),
    };
    // Validates both ids as path segments up front (they name the host output directory).
    threadLayout(this.settings.baseDir, key.userId, key.threadId);
    try {
      return await this.#serializer.hold(
        this.#serializerKey(key),
        async () => {
          // Emitted inside the acquire (so instrumentation attributes it to this call).
          const reused = await this.#reuse(key);
          if (reused !== undefined) return this.#acquired(reused, 'reuse');
          const reclaimed = await this.#reclaim(key);
          if (reclaimed !== undefined) return this.#acquired(reclaimed, 'reclaim');
          const discovered = await this.#discover(key);
          if (discovered !== undefined) return this.#acquired(discovered, 'discover');
          return this.#acquired(await this.#create(key, uploadShared, labels), 'create');
        },
        { signal: options.signal },
      );
    } catch (error) {
      if (error instanceof SerializerClosedError) throw this.#closedError();
      throw error;
    }
  }

  /** Subscribes to acquire paths, adoptions, reaps and ownership-store failures. */
  onEvent(listener: SandboxProviderEventListener): () => void {
    return this.#events.onEvent(listener);
  }

  #acquired(sandboxId: string, path: AcquirePath): string {
    this.#events.emit({ type: 'acquire', sandboxId, path });
    return sandboxId;
  }

  #ownershipError(operation: string, sandboxId: string, error: unknown): void {
    this.#logger.warn('The ownership store could not answer', {
      operation,
      sandboxId,
      error: errorMessage(error),
    });
    this.#events.emit({ type: 'ownership-error', operation, sandboxId, error });
  }

  override async release(sandboxId: string): Promise<void> {
    const entry = this.#active.get(sandboxId);
    if (entry === undefined) return;
    if (entry.key === undefined) {
      await this.#releaseAnonymous(sandboxId, entry);
      return;
    }
    try {
      await this.#serializer.hold(this.#serializerKey(entry.key), () =>
        this.#releaseLocked(sandboxId),
      );
    } catch (error) {
      if (!(error instanceof SerializerClosedError)) throw error;
    }
  }

  override async syncAgentSkills(
    sandboxId: string,
    options: SyncAgentSkillsOptions,
  ): Promise<void> {
    this.#assertOpen();
    const key: ThreadKey = {
      userId: resolveEffectiveUserId(options.userId),
      threadId: options.threadId,
    };
    await this.#serializer.hold(
      this.#serializerKey(key),
      async () => {
        const entry = this.#active.get(sandboxId);
        if (
          entry?.key === undefined ||
          threadKeyText(entry.key) !== threadKeyText(key) ||
          entry.sandbox.client === undefined
        ) {
          throw new SandboxNotFoundError(
            `e2b sandbox ${sandboxId} is not active for this thread`,
            sandboxId,
          );
        }
        await syncSkillsInto(entry.sandbox.client, {
          root: this.settings.skillsRoot,
          homeDir: this.settings.homeDir,
          projection: options.projection,
          signature: options.signature,
          clock: this.#clock,
          logger: this.#logger,
        });
      },
      { signal: options.signal },
    );
  }

  /** Full teardown: `reset()` is the same (the instance cannot be used again). */
  override async reset(): Promise<void> {
    await this.shutdown();
  }

  override shutdown(): Promise<void> {
    this.#shutdown ??= this.#doShutdown();
    return this.#shutdown;
  }

  // ------------------------------------------------------------------------------------------
  // acquire paths

  async #reuse(key: ThreadKey): Promise<string | undefined> {
    const id = this.#threads.get(threadKeyText(key));
    if (id === undefined) return undefined;
    const entry = this.#active.get(id);
    if (entry === undefined) {
      this.#threads.delete(threadKeyText(key));
      return undefined;
    }
    if (entry.sandbox.isDead || !(await entry.sandbox.ping())) {
      this.#logger.info('Dropping a dead e2b sandbox before reuse', { sandboxId: id });
      await this.#dropActive(id, entry);
      return undefined;
    }
    await this.#pushTimeout(entry.sandbox.client);
    if (!(await this.#publish(id))) {
      await this.#dropActive(id, entry);
      return undefined;
    }
    // Retaken after the round trips: renewal may have forgotten the entry meanwhile.
    return this.#active.get(id) === entry ? id : undefined;
  }

  async #reclaim(key: ThreadKey): Promise<string | undefined> {
    const seed = this.#seedOf(key);
    const entry = this.#warm.entries().find((e) => e.value.seed === seed);
    if (entry === undefined || this.#warm.take(entry.id, entry) === undefined) return undefined;
    const id = entry.id;
    const slot = this.#slots.beginTransition();
    this.#ownedRemoteOps.add(id);
    let remote: E2BRemoteSandbox;
    try {
      remote = await this.#sdk(() => this.#client.connect(id, this.#connectOptions()));
    } catch (error) {
      this.#ownedRemoteOps.delete(id);
      if (isSandboxGoneError(error)) {
        slot.release();
        await this.#forgetRemote(id);
        return undefined;
      }
      this.#logger.warn('Reconnecting a warm e2b sandbox failed; keeping a tombstone', {
        sandboxId: id,
        error: errorMessage(error),
      });
      slot.tombstone(id);
      return undefined;
    }
    const sandbox = this.#adapter(id, remote);
    if (!(await sandbox.ping())) {
      await sandbox.close();
      this.#ownedRemoteOps.delete(id);
      slot.release();
      await this.#forgetRemote(id);
      return undefined;
    }
    try {
      if (!(await this.#publish(id))) {
        await sandbox.close();
        this.#ownedRemoteOps.delete(id);
        slot.release();
        return undefined;
      }
    } catch (error) {
      await sandbox.close();
      this.#ownedRemoteOps.delete(id);
      slot.tombstone(id);
      throw error;
    }
    await this.#pushTimeout(remote);
    const failure = await runBootstrap(remote, this.settings.homeDir);
    if (failure !== undefined) {
      this.#logger.warn('Warm e2b sandbox failed bootstrap; discarding it', {
        sandboxId: id,
        error: failure.message,
      });
      await this.#discardVm(id, sandbox, slot);
      return undefined;
    }
    if (this.#closed) {
      await this.#killAndClose(id, sandbox);
      this.#ownedRemoteOps.delete(id);
      return undefined;
    }
    this.#register(id, sandbox, key, seed);
    this.#ownedRemoteOps.delete(id);
    slot.commit();
    return id;
  }

  async #discover(key: ThreadKey): Promise<string | undefined> {
    const stores = await this.#stores_();
    const wanted: Record<string, string> = {
      [E2B_TAGS.provider]: E2B_PROVIDER_TAG_VALUE,
      [E2B_TAGS.user]: key.userId,
      [E2B_TAGS.thread]: key.threadId,
      ...(key.spec ? { [E2B_TAGS.spec]: key.spec } : {}),
    };
    const inventory = await listRemoteInventory(
      this.#client,
      { query: { metadata: wanted } },
      {
        maxPages: this.settings.reconciliation.maxPages,
        maxItems: this.settings.reconciliation.maxItems,
        deadlineMs: this.#clock.now() + this.settings.reconciliation.maxSeconds * 1000,
      },
      this.#clock,
      this.#logger,
    );
    const candidates = inventory.entries
      .filter(
        (info) =>
          Object.entries(wanted).every(([k, v]) => info.metadata[k] === v) &&
          // A VM made to another spec (or to one, when this acquire has none) is not this one.
          (info.metadata[E2B_TAGS.spec] || undefined) === key.spec &&
          belongsToLedger(info, stores.ledgerKey) &&
          skillsRootOf(info, DEFAULT_SKILLS_ROOT) === this.settings.skillsRoot &&
          // Anything tracked here, in flight included: a VM reconciliation is still bootstrapping
          // is not free to adopt. Adopting it made reconciliation see "the thread got a sandbox
          // meanwhile" and release the lease of the VM just handed out.
          !this.#isTrackedLocally(info.sandboxId),
      )
      .sort(compareCandidates);
    for (const info of candidates) {
      const id = await this.#adoptDiscovered(info, key, stores);
      if (id !== undefined) return id;
    }
    return undefined;
  }

  async #adoptDiscovered(
    info: E2BSandboxInfo,
    key: ThreadKey,
    stores: Stores,
  ): Promise<string | undefined> {
    const id = info.sandboxId;
    this.#rememberTimeout(info);
    let remote: E2BRemoteSandbox;
    try {
      remote = await this.#sdk(() => this.#client.connect(id, this.#connectOptions()));
    } catch (error) {
      if (isSandboxGoneError(error)) await this.#ledgerRelease(id);
      this.#logger.info('Skipping an e2b discovery candidate that cannot be connected', {
        sandboxId: id,
        error: errorMessage(error),
      });
      return undefined;
    }
    const sandbox = this.#adapter(id, remote);
    if (!(await sandbox.ping())) {
      await sandbox.close();
      await this.#ledgerRelease(id);
      return undefined;
    }
    if (stores.capacity !== undefined) {
      try {
        await stores.capacity.track(id, info.metadata[E2B_TAGS.capacityReservation] || undefined);
      } catch (error) {
        await sandbox.close();
        throw this.#capacityError(
          'Deployment-wide E2B capacity is unavailable',
          'capacity_backend',
          {
            cause: error,
          },
        );
      }
    }
    let slot: Slot;
    try {
      slot = await this.#reserveLocal(this.#deadline());
    } catch (error) {
      // The VM stays as it is: it may be a peer's, and it is still this thread's sandbox later.
      const reason = (error as SandboxCapacityExceededError).reason;
      this.#logger.warn(
        reason === 'shutdown'
          ? 'Provider is shutting down; not adopting a discovered e2b sandbox'
          : 'Sandbox capacity is full; not adopting a discovered e2b sandbox',
        { sandboxId: id },
      );
      await sandbox.close();
      throw error;
    }
    this.#unownedRemoteOps.add(id);
    const giveUp = async (): Promise<void> => {
      this.#unownedRemoteOps.delete(id);
      slot.release();
      await sandbox.close();
    };
    if (this.#closed) {
      await giveUp();
      return undefined;
    }
    let took: boolean;
    try {
      took = await this.#publish(id);
    } catch (error) {
      await giveUp();
      throw error;
    }
    if (!took) {
      await giveUp();
      throw new SandboxBeingDestroyedError(id);
    }
    await this.#pushTimeout(remote);
    const failure = await runBootstrap(remote, this.settings.homeDir);
    if (failure !== undefined) {
      this.#logger.warn('Discovered e2b sandbox failed bootstrap; discarding it', {
        sandboxId: id,
        error: failure.message,
      });
      await this.#discardVm(id, sandbox, slot, this.#unownedRemoteOps);
      return undefined;
    }
    if (this.#closed) {
      await this.#killAndClose(id, sandbox);
      this.#unownedRemoteOps.delete(id);
      return undefined;
    }
    this.#register(id, sandbox, key, this.#seedOf(key));
    this.#unownedRemoteOps.delete(id);
    slot.commit();
    return id;
  }

  async #create(
    key: ThreadKey | undefined,
    uploadShared: boolean,
    labels?: Readonly<Record<string, string>>,
  ): Promise<string> {
    const stores = await this.#stores_();
    const { slot, token } = await this.#reserveCapacity(stores);
    // An acquire's labels go under sbx's own tags, which find and own the VM.
    const metadata = buildVmMetadata({
      ownerId: stores.ownership.ownerId,
      nowMs: this.#clock.now(),
      userId: key?.userId,
      threadId: key?.threadId,
      ledgerKey: stores.ledgerKey,
      reservationToken: token,
      skillsRoot: this.settings.skillsRoot,
      defaultSkillsRoot: DEFAULT_SKILLS_ROOT,
      ...(labels ? { labels } : {}),
      ...(key?.spec ? { spec: key.spec } : {}),
      ...(key?.timeoutSeconds !== undefined ? { timeoutSeconds: key.timeoutSeconds } : {}),
    });
    const idleSeconds = key?.timeoutSeconds ?? this.settings.idleTimeoutSeconds;
    let remote: E2BRemoteSandbox;
    try {
      remote = await this.#sdk(() =>
        this.#client.create({
          template: key?.template ?? this.settings.template,
          metadata,
          ...(idleSeconds > 0 ? { timeoutMs: idleSeconds * 1000 } : {}),
          ...(Object.keys(this.settings.environment).length > 0
            ? { envs: { ...this.settings.environment } }
            : {}),
        }),
      );
    } catch (error) {
      // The ledger reservation stays on purpose: the create may have succeeded server-side, and
      // the VM's reservation tag lets reconciliation turn it into the VM's slot.
      slot.release();
      throw error;
    }
    const id = remote.sandboxId || randomBytes(4).toString('hex');
    if (key?.timeoutSeconds !== undefined) this.#vmTimeouts.set(id, key.timeoutSeconds);
    this.#ownedRemoteOps.add(id);
    if (stores.capacity !== undefined) {
      try {
        await stores.capacity.track(id, token);
      } catch (error) {
        this.#logger.warn('Tracking a new e2b sandbox in the capacity ledger failed', {
          sandboxId: id,
          error: errorMessage(error),
        });
      }
    }
    const sandbox = this.#adapter(id, remote);
    if (this.#closed) await this.#abandonCreateAfterShutdown(id, sandbox);
    let took: boolean;
    try {
      took = await this.#publish(id);
    } catch (error) {
      await this.#discardVm(id, sandbox, slot);
      throw error;
    }
    if (!took) {
      await this.#discardVm(id, sandbox, slot);
      throw new SandboxBeingDestroyedError(id);
    }
    const failure = await runBootstrap(remote, this.settings.homeDir);
    if (failure !== undefined) {
      await this.#discardVm(id, sandbox, slot);
      throw new SandboxRuntimeError(`Failed to bootstrap e2b sandbox ${id}: ${failure.message}`, {
        cause: failure,
      });
    }
    await this.#oneShotUploads(remote, key, uploadShared);
    if (this.#closed) {
      await this.#killAndClose(id, sandbox);
      this.#ownedRemoteOps.delete(id);
      throw this.#capacityError(
        'Sandbox provider shut down while creating a sandbox; it was cleaned up',
        'shutdown',
        { retryAfterSeconds: SHUTDOWN_RETRY_AFTER_SECONDS },
      );
    }
    this.#register(id, sandbox, key, key === undefined ? undefined : this.#seedOf(key));
    this.#ownedRemoteOps.delete(id);
    slot.commit();
    return id;
  }

  /** A create that returns after shutdown: kill it, once more through a new client if needed. */
  async #abandonCreateAfterShutdown(id: string, sandbox: E2BSandbox): Promise<never> {
    let confirmed = false;
    try {
      await sandbox.client?.kill();
      confirmed = true;
    } catch (error) {
      this.#logger.warn('Killing a sandbox created during shutdown failed; retrying once', {
        sandboxId: id,
        error: errorMessage(error),
      });
      try {
        const retry = await this.#client.connect(id);
        try {
          await retry.kill();
          confirmed = true;
        } finally {
          await retry.close().catch(() => undefined);
        }
      } catch (retryError) {
        this.#logger.error('Could not confirm cleanup of a sandbox created during shutdown', {
          sandboxId: id,
          error: errorMessage(retryError),
        });
      }
    }
    await sandbox.close();
    if (confirmed) {
      this.#ownedRemoteOps.delete(id);
      await this.#ledgerRelease(id);
    }
    throw this.#capacityError(
      confirmed
        ? 'Sandbox provider shut down while creating a sandbox; it was cleaned up'
        : `Sandbox provider shut down while creating a sandbox; could not confirm cleanup of ${id}`,
      'shutdown',
      { retryAfterSeconds: SHUTDOWN_RETRY_AFTER_SECONDS },
    );
  }

  /**
   * Kills a VM this provider will not hand out and settles its capacity slot: an uncertain kill
   * keeps a tombstone, anything else frees the slot. `ops` is the remote-operation set tracking it
   * (owned for creates and warm reclaims, unowned for discoveries).
   */
  async #discardVm(
    id: string,
    sandbox: E2BSandbox,
    slot: Slot,
    ops: Set<string> = this.#ownedRemoteOps,
  ): Promise<void> {
    const outcome = await this.#killAndClose(id, sandbox);
    ops.delete(id);
    if (outcome === 'failed') slot.tombstone(id);
    else slot.release();
  }

  /**
   * The one-shot uploads of a new VM: the shared skills projection (unrestricted sandboxes only),
   * then the configured mounts, all in one pass with one byte/file budget and deadline. The two
   * sources are independent: a projection that cannot be planned uploads nothing of itself but
   * never costs the operator's configured mounts, and one tree that fails does not stop the next.
   */
  async #oneShotUploads(
    remote: E2BRemoteSandbox,
    key: ThreadKey | undefined,
    uploadShared: boolean,
  ): Promise<void> {
    const root = this.settings.skillsRoot;
    const pass = new UploadPass(this.#clock, {}, this.#logger);
    const trees: PlannedTree[] = [];
    if (uploadShared) {
      for (const t of await this.#skillProjectionTrees(key)) trees.push(t);
    }
    for (const mount of this.settings.mounts) {
      const dest = mount.containerPath.replace(/\/+$/, '');
      if (!dest.startsWith('/')) continue;
      if (dest === root || dest.startsWith(`${root}/`)) {
        this.#logger.warn('Skipping a mount inside the skills root (the projection owns it)', {
          containerPath: dest,
        });
        continue;
      }
      trees.push({ source: mount.hostPath, dest, readOnly: mount.readOnly, kind: 'mount' });
    }
    for (const tree of trees) {
      if (pass.stopped || !pass.inTime()) return;
      if (tree.kind === 'mount' && !(await stat(tree.source).catch(() => undefined))) continue;
      try {
        await uploadTree(remote, tree.source, tree.dest, pass, {
          readOnly: tree.readOnly,
          logger: this.#logger,
        });
      } catch (error) {
        this.#logger.warn(
          tree.kind === 'mount'
            ? 'Uploading a configured mount failed'
            : 'Uploading a skills projection category failed',
          { source: tree.source, destination: tree.dest, error: errorMessage(error) },
        );
      }
    }
  }

  /**
   * Plans the skills projection: one read-only tree per category view that exists. Planning is
   * all or nothing: a view that cannot be inspected (anything but "absent") means the projection
   * is unknown, and half of it would show the agent a skill set nobody chose.
   */
  async #skillProjectionTrees(key: ThreadKey | undefined): Promise<PlannedTree[]> {
    const userId = key?.userId ?? resolveEffectiveUserId(undefined);
    const trees: PlannedTree[] = [];
    try {
      for (const category of SKILL_CATEGORIES) {
        const host = sharedSkillsViewPath(this.settings.baseDir, userId, category);
        let isDir: boolean;
        try {
          isDir = (await stat(host)).isDirectory();
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw error;
        }
        if (isDir) {
          trees.push({
            source: host,
            dest: `${this.settings.skillsRoot}/${category}`,
            readOnly: true,
            kind: 'skills',
          });
        }
      }
    } catch (error) {
      this.#logger.warn('Planning the skills projection failed; uploading configured mounts only', {
        userId,
        error: errorMessage(error),
      });
      return [];
    }
    return trees;
  }

  // ------------------------------------------------------------------------------------------
  // release

  async #releaseLocked(id: string): Promise<void> {
    const entry = this.#active.get(id);
    if (entry === undefined || entry.key === undefined) return;
    const key = entry.key;
    this.#active.delete(id);
    if (this.#threads.get(threadKeyText(key)) === id) this.#threads.delete(threadKeyText(key));
    const slot = this.#slots.beginTransition();
    const sandbox = entry.sandbox;
    // Kept past the adapter's close: a racing shutdown may still need to kill through it.
    const remote = sandbox.client;
    try {
      if (sandbox.isDead) {
        await this.#killAndClose(id, sandbox);
        return;
      }
      await syncOutputs(
        sandbox,
        threadLayout(this.settings.baseDir, key.userId, key.threadId).threadDir,
        { clock: this.#clock, logger: this.#logger },
      );
      if (sandbox.isDead) {
        await this.#killAndClose(id, sandbox);
        return;
      }
      await this.#pushTimeout(remote);
      if (this.#closed) {
        await this.#killAndClose(id, sandbox);
        return;
      }
      if (this.#warm.put(id, { seed: entry.seed ?? this.#seedOf(key), key }) === undefined) {
        await this.#killAndClose(id, sandbox);
        return;
      }
      // Counted as warm from here on: the transition ends before the (possibly slow) close.
      slot.commit();
      // A warm VM is evictable: capacity waiters can now make room.
      this.#notify();
      await sandbox.close();
    } finally {
      slot.release();
    }
  }

  async #releaseAnonymous(id: string, entry: ActiveEntry): Promise<void> {
    // Nothing can ever find a thread-less sandbox again, so parking it would only hold a slot.
    if (this.#active.get(id) !== entry) return;
    this.#active.delete(id);
    await this.#killAndClose(id, entry.sandbox);
    this.#notify();
  }

  // ------------------------------------------------------------------------------------------
  // capacity

  #total(): number {
    return this.#active.size + this.#warm.size + this.#slots.held;
  }

  #deadline(): number {
    return this.#clock.now() + this.settings.acquireTimeoutSeconds * 1000;
  }

  #notify(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Resolves when a slot may have freed, or after `ms` (on the provider's clock). */
  #waitForSlot(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.#clock.setTimeout(() => {
        this.#waiters.delete(wake);
        resolve();
      }, ms);
      const wake = (): void => {
        this.#clock.clearTimeout(timer);
        resolve();
      };
      this.#waiters.add(wake);
    });
  }

  #capacityError(
    message: string,
    reason: string,
    extra: { retryAfterSeconds?: number; cause?: unknown } = {},
  ): SandboxCapacityExceededError {
    return new SandboxCapacityExceededError(
      message,
      {
        active: this.#active.size,
        warm: this.#warm.size,
        reserved: this.#slots.reserved,
        replicas: this.settings.replicas,
        reason,
        retryAfterSeconds: extra.retryAfterSeconds ?? 5,
      },
      extra.cause === undefined ? {} : { cause: extra.cause },
    );
  }

  #shutdownCapacityError(message = 'Sandbox provider is shutting down; cannot acquire capacity') {
    return this.#capacityError(message, 'shutdown', {
      retryAfterSeconds: SHUTDOWN_RETRY_AFTER_SECONDS,
    });
  }

  /** One local slot under the overflow policy; `wait` waits until `deadline`. */
  async #reserveLocal(deadline: number): Promise<Slot> {
    const { capacityLimit: limit, overflowPolicy: policy } = this.settings;
    for (;;) {
      if (this.#closed) throw this.#shutdownCapacityError();
      if (this.#total() < limit) return this.#slots.reserve();
      const evicted = await this.#evictOne();
      if (evicted !== undefined) {
        if (this.#closed) {
          throw this.#shutdownCapacityError('Sandbox provider shut down while acquiring capacity');
        }
        if (this.#total() < limit) return this.#slots.reserve();
      }
      if (policy === 'reject') {
        throw this.#capacityError(
          `All ${limit} sandbox capacity slots are in use and overflow_policy is 'reject'`,
          'capacity',
        );
      }
      if (policy === 'burst') {
        throw this.#capacityError(
          `All ${limit} sandbox capacity slots are in use (replicas=${this.settings.replicas}, burst=${this.settings.burstLimit})`,
          'capacity',
        );
      }
      const remaining = deadline - this.#clock.now();
      if (remaining <= 0) {
        throw this.#capacityError(
          `Timed out after ${this.settings.acquireTimeoutSeconds}s waiting for a sandbox capacity slot (limit ${limit})`,
          'capacity',
        );
      }
      await this.#waitForSlot(Math.min(remaining, 1000));
    }
  }

  /** A local slot plus, with a ledger, a deployment-wide reservation for one create. */
  async #reserveCapacity(stores: Stores): Promise<{ slot: Slot; token: string | undefined }> {
    const deadline = this.#deadline();
    const ledger = stores.capacity;
    const token = ledger === undefined ? undefined : randomUUID().replace(/-/g, '');
    for (;;) {
      const slot = await this.#reserveLocal(deadline);
      if (ledger === undefined || token === undefined) return { slot, token };
      let outcome: CapacityReserveOutcome;
      try {
        outcome = await ledger.reserve(token);
      } catch (error) {
        slot.release();
        throw this.#capacityError(
          'Deployment-wide E2B capacity is unavailable',
          'capacity_backend',
          {
            cause: error,
          },
        );
      }
      if (outcome === CapacityReserveOutcome.GRANTED) return { slot, token };
      slot.release();
      if (outcome === CapacityReserveOutcome.FULL && (await this.#evictOne()) !== undefined)
        continue;
      if (this.settings.overflowPolicy !== 'wait') {
        throw outcome === CapacityReserveOutcome.NOT_READY
          ? this.#capacityError(
              'Deployment-wide E2B capacity is initializing',
              'capacity_initializing',
            )
          : this.#capacityError('Deployment-wide E2B capacity is full', 'capacity');
      }
      const remaining = deadline - this.#clock.now();
      if (remaining <= 0) {
        throw this.#capacityError(
          `Timed out after ${this.settings.acquireTimeoutSeconds}s waiting for deployment-wide E2B capacity`,
          'capacity',
        );
      }
      await this.#waitForSlot(Math.min(remaining, 1000));
      if (this.#closed) throw this.#shutdownCapacityError();
    }
  }

  /** Frees one slot: retries a tombstone first, else evicts the oldest warm VM. */
  async #evictOne(): Promise<string | undefined> {
    for (const [id, tomb] of this.#slots.tombstones) {
      if (tomb.retrying) continue;
      tomb.retrying = true;
      try {
        if (await this.#retryTombstone(id)) {
          this.#slots.clearTombstone(id);
          return id;
        }
      } finally {
        tomb.retrying = false;
      }
      return undefined;
    }
    return this.#warm.evictOldest();
  }

  async #retryTombstone(id: string): Promise<boolean> {
    if (!(await this.#claimForDestroy(id))) return true;
    return this.#heldTeardown(id, async () => {
      let remote: E2BRemoteSandbox;
      try {
        remote = await this.#sdk(() => this.#client.connect(id));
      } catch (error) {
        if (isSandboxGoneError(error)) {
          await this.#ledgerRelease(id);
          return true;
        }
        return false;
      }
      try {
        await remote.kill();
      } catch (error) {
        this.#logger.warn('Tombstone kill failed; keeping its slot', {
          sandboxId: id,
          error: errorMessage(error),
        });
        return false;
      } finally {
        await remote.close().catch(() => undefined);
      }
      await this.#ledgerRelease(id);
      return true;
    });
  }

  /** WarmPool destroy hook. `true` = gone (or a peer's, forgotten); `false` keeps its slot. */
  async #destroyWarm(entry: WarmEntry<WarmValue>, reason: WarmPoolDestroyReason): Promise<boolean> {
    const id = entry.id;
    if (!(await this.#claimForDestroy(id))) {
      this.#owned.delete(id);
      this.#logger.info('A peer owns a warm e2b sandbox; forgetting it locally', {
        sandboxId: id,
        reason,
      });
      this.#notifySoon();
      return true;
    }
    return this.#heldTeardown(id, async () => {
      let remote: E2BRemoteSandbox;
      try {
        remote = await this.#sdk(() => this.#client.connect(id));
      } catch (error) {
        if (isSandboxGoneError(error)) {
          await this.#ledgerRelease(id);
          this.#notifySoon();
          return true;
        }
        this.#logger.warn('Reconnecting a warm e2b sandbox for eviction failed', {
          sandboxId: id,
          error: errorMessage(error),
        });
        return this.#leaveToShutdown(id);
      }
      try {
        await remote.kill();
      } catch (error) {
        this.#logger.warn('Killing a warm e2b sandbox failed; keeping it', {
          sandboxId: id,
          error: errorMessage(error),
        });
        return this.#leaveToShutdown(id);
      } finally {
        await remote.close().catch(() => undefined);
      }
      await this.#ledgerRelease(id);
      this.#notifySoon();
      return true;
    });
  }

  /**
   * An eviction that failed after shutdown began: shutdown snapshotted every warm id (this one
   * included, since the pool keeps an entry whose teardown is in flight) and kills it through a
   * connection of its own. Keeping the entry would leave a warm VM in a provider that no longer
   * reaps anything, so the pool is told to drop it.
   */
  #leaveToShutdown(id: string): boolean {
    if (!this.#closed) return false;
    this.#logger.info('Leaving a warm e2b sandbox whose eviction failed to the shutdown teardown', {
      sandboxId: id,
    });
    return true;
  }

  /** Waiters re-check after the pool removed the entry (it does so right after the hook). */
  #notifySoon(): void {
    setImmediate(() => this.#notify());
  }

  // ------------------------------------------------------------------------------------------
  // ownership and teardown helpers

  async #publish(id: string): Promise<boolean> {
    const { ownership } = await this.#stores_();
    this.#intent.add(id);
    try {
      const took = await ownership.take(id);
      if (took) this.#owned.add(id);
      return took;
    } finally {
      this.#intent.delete(id);
    }
  }

  /** Fail-closed: a store that cannot answer is treated as "a peer owns it". */
  async #claimForDestroy(id: string): Promise<boolean> {
    return (await this.#claimForDestroyOutcome(id)).outcome === 'claimed';
  }

  /** `#claimForDestroy`, telling a refusal (a peer's lease) from a store that cannot answer. */
  async #claimForDestroyOutcome(
    id: string,
  ): Promise<
    { outcome: 'claimed' } | { outcome: 'refused' } | { outcome: 'unknown'; error: unknown }
  > {
    const { ownership } = await this.#stores_();
    try {
      return (await ownership.claim(id, { forDestroy: true }))
        ? { outcome: 'claimed' }
        : { outcome: 'refused' };
    } catch (error) {
      this.#logger.warn('Ownership claim failed; treating the sandbox as peer-owned', {
        sandboxId: id,
        error: errorMessage(error),
      });
      return { outcome: 'unknown', error };
    }
  }

  /**
   * Runs a kill under the `del:` marker the caller just claimed, re-claiming it every renewal
   * interval until the kill settles and releasing it afterwards (core's `withHeldTeardownLease`).
   * A kill can outlive the lease TTL (a slow control plane); without the heartbeat the marker
   * would lapse, a peer's `take()` would adopt the VM being killed, and our kill would then land
   * on the turn just handed to that peer.
   */
  async #heldTeardown<T>(id: string, teardown: () => Promise<T>): Promise<T> {
    const { ownership } = await this.#stores_();
    this.#tearingDown.add(id);
    try {
      return await withHeldTeardownLease(
        {
          store: ownership,
          sandboxId: id,
          intervalMs: this.ownership.renewalIntervalSeconds * 1000,
          clock: this.#clock,
          logger: this.#logger,
        },
        teardown,
      );
    } finally {
      this.#tearingDown.delete(id);
      this.#owned.delete(id);
    }
  }

  async #releaseLease(id: string): Promise<void> {
    this.#owned.delete(id);
    const { ownership } = await this.#stores_();
    try {
      await ownership.release(id);
    } catch (error) {
      this.#logger.warn('Releasing an ownership lease failed', {
        sandboxId: id,
        error: errorMessage(error),
      });
    }
  }

  async #ledgerRelease(id: string): Promise<void> {
    const { capacity } = await this.#stores_();
    if (capacity === undefined) return;
    try {
      await capacity.release(id);
    } catch (error) {
      this.#logger.warn('Releasing a capacity ledger slot failed (reconciliation repairs it)', {
        sandboxId: id,
        error: errorMessage(error),
      });
    }
  }

  /**
   * Kills a VM we can claim for destruction, then closes its client; a peer-owned VM is only
   * closed. `'destroyed'` (confirmed gone) and `'peer'` (not ours to kill) both free the caller's
   * slot; `'failed'` means the VM may still run, so the caller keeps a tombstone.
   */
  async #killAndClose(id: string, sandbox: E2BSandbox): Promise<'destroyed' | 'peer' | 'failed'> {
    const client = sandbox.client;
    let outcome: 'destroyed' | 'peer' | 'failed' = 'failed';
    if (await this.#claimForDestroy(id)) {
      outcome = await this.#heldTeardown(id, async () => {
        try {
          if (client === undefined) throw new Error('no client: cannot confirm destruction');
          await this.#sdk(() => client.kill());
          await this.#ledgerRelease(id);
          return 'destroyed';
        } catch (error) {
          if (isSandboxGoneError(error)) return 'destroyed';
          this.#logger.warn('Killing an e2b sandbox failed', {
            sandboxId: id,
            error: errorMessage(error),
          });
          return 'failed';
        }
      });
    } else {
      outcome = 'peer';
      // Whatever lease we had is a peer's now: renewal must not try to keep it.
      this.#owned.delete(id);
      this.#logger.info('Not killing an e2b sandbox a peer owns', { sandboxId: id });
    }
    await sandbox.close();
    return outcome;
  }

  async #dropActive(id: string, entry: ActiveEntry): Promise<void> {
    if (this.#active.get(id) === entry) this.#active.delete(id);
    this.#vmTimeouts.delete(id);
    if (entry.key && this.#threads.get(threadKeyText(entry.key)) === id) {
      this.#threads.delete(threadKeyText(entry.key));
    }
    await entry.sandbox.close();
    await this.#ledgerRelease(id);
    this.#notify();
  }

  async #forgetRemote(id: string): Promise<void> {
    this.#vmTimeouts.delete(id);
    await this.#ledgerRelease(id);
    if (this.#owned.has(id)) await this.#releaseLease(id);
  }

  #register(id: string, sandbox: E2BSandbox, key: ThreadKey | undefined, seed: string | undefined) {
    // Active and warm are exclusive: a warm entry left behind would give the VM a second reaper.
    this.#warm.forget(id);
    this.#active.set(id, { sandbox, key, seed });
    if (key !== undefined) this.#threads.set(threadKeyText(key), id);
  }

  /** A discovered VM's spec timeout (its tag), so renewals keep it. */
  #rememberTimeout(info: E2BSandboxInfo): void {
    const seconds = specTimeoutOf(info);
    if (seconds !== undefined) this.#vmTimeouts.set(info.sandboxId, seconds);
  }

  async #pushTimeout(remote: E2BRemoteSandbox | undefined): Promise<void> {
    if (remote === undefined) return;
    // The VM's own timeout (its acquire spec's, kept from its creation) else the configured one.
    const seconds = this.#vmTimeouts.get(remote.sandboxId) ?? this.settings.idleTimeoutSeconds;
    if (seconds <= 0) return;
    try {
      await this.#sdk(() => remote.setTimeout(seconds * 1000));
    } catch (error) {
      this.#logger.debug('Refreshing the e2b sandbox timeout failed', {
        sandboxId: remote.sandboxId,
        error: errorMessage(error),
      });
    }
  }

  // ------------------------------------------------------------------------------------------
  // background: lease renewal and reconciliation

  #startBackground(): void {
    if (this.#closed) return;
    this.#warm.start();
    this.#scheduleRenewal();
    // The startup pass runs in the background: acquire never waits for it.
    void this.#reconcileAndReschedule();
  }

  #scheduleRenewal(): void {
    if (this.#closed) return;
    this.#renewTimer = this.#clock.setTimeout(async () => {
      await this.renewLeases().catch((error: unknown) =>
        this.#logger.error('Lease renewal pass failed', { error: errorMessage(error) }),
      );
      this.#scheduleRenewal();
    }, this.ownership.renewalIntervalSeconds * 1000);
  }

  async #reconcileAndReschedule(): Promise<void> {
    await this.reconcileNow().catch((error: unknown) =>
      this.#logger.error('E2B reconciliation failed', { error: errorMessage(error) }),
    );
    if (this.#closed) return;
    this.#reconcileTimer = this.#clock.setTimeout(
      () => this.#reconcileAndReschedule(),
      this.settings.reconciliation.intervalSeconds * 1000,
    );
  }

  /**
   * Renews every lease we hold. A store that cannot answer means "unknown": keep and retry. An
   * absent lease is re-claimed; a lease a peer holds makes us forget the VM without touching it.
   */
  async renewLeases(): Promise<void> {
    const { ownership } = await this.#stores_();
    for (const id of [...this.#owned]) {
      if (this.#closed) return;
      if (this.#tearingDown.has(id)) continue;
      let outcome: RenewOutcome;
      try {
        outcome = await ownership.renew(id);
      } catch (error) {
        // Unknown: the sandbox is kept and renewed again next tick.
        this.#ownershipError('renew', id, error);
        continue;
      }
      if (outcome === RenewOutcome.RENEWED) continue;
      if (outcome === RenewOutcome.LAPSED) {
        try {
          if (await ownership.claim(id)) continue;
        } catch (error) {
          this.#ownershipError('claim', id, error);
          continue;
        }
      }
      await this.#forgetLost(id);
    }
  }

  async #forgetLost(id: string): Promise<void> {
    if (this.#intent.has(id)) return;
    this.#owned.delete(id);
    const entry = this.#active.get(id);
    if (entry !== undefined) {
      this.#active.delete(id);
      if (entry.key && this.#threads.get(threadKeyText(entry.key)) === id) {
        this.#threads.delete(threadKeyText(entry.key));
      }
      await entry.sandbox.close();
    }
    this.#warm.forget(id);
    this.#logger.info('A peer took over an e2b sandbox; forgot it locally', { sandboxId: id });
    this.#notify();
  }

  /** One reconciliation pass (shared if one is already running). */
  reconcileNow(): Promise<ReconciliationStats> {
    this.#reconciling ??= this.#reconcile().finally(() => {
      this.#reconciling = undefined;
    });
    return this.#reconciling;
  }

  async #reconcile(): Promise<ReconciliationStats> {
    const stats: ReconciliationStats = {
      discovered: 0,
      adopted: 0,
      duplicates: 0,
      deferred: 0,
      killed: 0,
      dead: 0,
      budgetExhausted: false,
    };
    if (this.#closed) return stats;
    const stores = await this.#stores_();
    const r = this.settings.reconciliation;
    const deadline = this.#clock.now() + r.maxSeconds * 1000;
    let revision: number | undefined;
    if (stores.capacity !== undefined) {
      try {
        revision = await stores.capacity.revision();
      } catch (error) {
        this.#logger.warn('Reading the capacity ledger revision failed', {
          error: errorMessage(error),
        });
      }
    }
    const inventory = await this.#listOurs(stores, deadline);
    stats.budgetExhausted = inventory.budgetExhausted;
    const entries = inventory.entries;
    stats.discovered = entries.length;
    if (stores.capacity !== undefined && revision !== undefined) {
      try {
        const applied = await stores.capacity.reconcile({
          expectedRevision: revision,
          entries: entries.map((e) => ({
            sandboxId: e.sandboxId,
            reservationToken: e.metadata[E2B_TAGS.capacityReservation] || undefined,
          })),
          complete: inventory.complete,
          maxAgeMs: reservationMaxAgeMs(this.ownership, this.settings),
        });
        if (!applied) this.#logger.debug('Capacity inventory was stale; not applied');
      } catch (error) {
        this.#logger.warn('Applying the capacity inventory failed', { error: errorMessage(error) });
      }
    }

    const { groups, orphans } = groupByThread(entries);
    for (const { key, infos } of groups) {
      if (this.#closed) break;
      const plan = await this.#planGroup(key, infos, deadline);
      stats.dead += plan.dead.length;
      stats.deferred += plan.unprobed.length;
      if (plan.unprobed.length > 0) stats.budgetExhausted = true;
      if (plan.adoptable !== undefined) {
        this.#rememberTimeout(plan.adoptable.info);
        if (await this.#adoptCanonical(plan.adoptable.info, plan.adoptable.remote, key, stores)) {
          stats.adopted += 1;
          this.#events.emit({ type: 'adopt', sandboxId: plan.adoptable.info.sandboxId });
        } else stats.deferred += 1;
      }
      stats.duplicates += plan.duplicates.length;
      for (const dup of plan.duplicates) {
        const outcome = await this.#reapAfter(dup, r.graceSeconds * 1000, false);
        if (outcome === 'killed') {
          stats.killed += 1;
          this.#events.emit({ type: 'reap', sandboxId: dup.sandboxId, reason: 'duplicate' });
        } else stats.deferred += 1;
      }
    }
    for (const orphan of orphans) {
      if (this.#closed) break;
      const outcome = await this.#reapAfter(orphan, r.orphanTtlSeconds * 1000, true);
      if (outcome === 'killed') {
        stats.killed += 1;
        this.#events.emit({ type: 'reap', sandboxId: orphan.sandboxId, reason: 'orphan' });
      } else stats.deferred += 1;
    }
    this.#forgetUnlisted(inventory);
    this.#logger.debug('E2B reconciliation pass', { ...stats });
    return stats;
  }

  /**
   * The VMs of this provider tag and this ledger, within the reconciliation budgets. Every path
   * that counts, adopts, reaps or shows VMs reads the same inventory.
   */
  async #listOurs(stores: Stores, deadline: number): Promise<RemoteInventory> {
    const r = this.settings.reconciliation;
    const inventory = await listRemoteInventory(
      this.#client,
      {
        query: {
          metadata: { [E2B_TAGS.provider]: E2B_PROVIDER_TAG_VALUE },
          ...(this.settings.listStates ? { state: this.settings.listStates } : {}),
        },
      },
      { maxPages: r.maxPages, maxItems: r.maxItems, deadlineMs: deadline },
      this.#clock,
      this.#logger,
    );
    return {
      ...inventory,
      entries: inventory.entries.filter((e) => belongsToLedger(e, stores.ledgerKey)),
    };
  }

  /** First sightings of VMs a complete listing no longer shows are dropped. */
  #forgetUnlisted(inventory: RemoteInventory): void {
    if (!inventory.complete) return;
    const listed = new Set(inventory.entries.map((e) => e.sandboxId));
    for (const id of [...this.#firstSeen.keys()]) if (!listed.has(id)) this.#firstSeen.delete(id);
  }

  /**
   * The canonical-VM rule of one (user, thread) group, shared by reconciliation and `reapOrphans`:
   * the VMs of this skills root are tried in order (this thread's own VM, then other locally
   * tracked ones, then oldest first) until one is tracked here or answers a liveness probe; the
   * rest of that root, and every VM prepared for another root, are duplicates. VMs that fail the
   * probe are neither canonical nor duplicates, and those the time budget left unprobed stay
   * undecided: a candidate that was never looked at must not turn its successors into duplicates.
   * The caller owns `adoptable.remote` (adopt it, or close it).
   */
  async #planGroup(key: ThreadKey, infos: E2BSandboxInfo[], deadline: number): Promise<GroupPlan> {
    const mine = this.#threads.get(threadKeyText(key));
    const local = (id: string) => this.#isTrackedLocally(id);
    const sameRoot = infos
      .filter((i) => skillsRootOf(i, DEFAULT_SKILLS_ROOT) === this.settings.skillsRoot)
      .sort(compareCandidates)
      .sort((a, b) => {
        const rank = (i: E2BSandboxInfo) => (i.sandboxId === mine ? 0 : local(i.sandboxId) ? 1 : 2);
        return rank(a) - rank(b);
      });
    // A VM prepared for another skills root is never adoptable; it is reaped like a duplicate.
    const plan: GroupPlan = {
      duplicates: infos.filter(
        (i) => skillsRootOf(i, DEFAULT_SKILLS_ROOT) !== this.settings.skillsRoot,
      ),
      dead: [],
      unprobed: [],
    };
    let haveCanonical = false;
    for (const info of sameRoot) {
      if (haveCanonical) {
        plan.duplicates.push(info);
        continue;
      }
      if (local(info.sandboxId)) {
        haveCanonical = true;
        plan.localCanonical = info;
        continue;
      }
      if (this.#clock.now() >= deadline) {
        plan.unprobed.push(info);
        continue;
      }
      const probed = await this.#probe(info.sandboxId);
      if (probed === undefined) {
        plan.dead.push(info);
        continue;
      }
      haveCanonical = true;
      plan.adoptable = { info, remote: probed };
    }
    return plan;
  }

  #isTrackedLocally(id: string): boolean {
    return (
      this.#active.has(id) ||
      this.#warm.has(id) ||
      this.#slots.tombstones.has(id) ||
      this.#ownedRemoteOps.has(id) ||
      this.#unownedRemoteOps.has(id)
    );
  }

  /** Connect plus liveness probe; `undefined` when the VM is dead or unreachable. */
  async #probe(id: string): Promise<E2BRemoteSandbox | undefined> {
    let remote: E2BRemoteSandbox;
    try {
      remote = await this.#sdk(() => this.#client.connect(id));
    } catch {
      return undefined;
    }
    const sandbox = this.#adapter(id, remote);
    if (await sandbox.ping()) return remote;
    await remote.close().catch(() => undefined);
    return undefined;
  }

  async #adoptCanonical(
    info: E2BSandboxInfo,
    remote: E2BRemoteSandbox,
    key: ThreadKey,
    stores: Stores,
  ): Promise<boolean> {
    const id = info.sandboxId;
    const sandbox = this.#adapter(id, remote);
    if (this.#closed || this.#total() >= this.settings.capacityLimit) {
      await sandbox.close();
      return false;
    }
    if (stores.capacity !== undefined) {
      try {
        await stores.capacity.track(id, info.metadata[E2B_TAGS.capacityReservation] || undefined);
      } catch {
        await sandbox.close();
        return false;
      }
    }
    const slot = this.#slots.reserve();
    this.#unownedRemoteOps.add(id);
    this.#intent.add(id);
    try {
      let claimed = false;
      try {
        claimed = await stores.ownership.claim(id);
      } catch {
        claimed = false;
      }
      if (!claimed) {
        // A live peer holds it (or the store cannot say): nothing of ours is in flight, so the
        // slot is given back. A tombstone here would count a peer's VM against this instance,
        // hide it from discovery and every later pass (tracked locally), so it was never adopted
        // once the peer crashed, and a tombstone retry after the lapse would kill it instead.
        slot.release();
        await sandbox.close();
        return false;
      }
      this.#owned.add(id);
      const failure = await runBootstrap(remote, this.settings.homeDir);
      if (failure !== undefined) {
        const outcome = await this.#killAndClose(id, sandbox);
        if (outcome === 'failed') slot.tombstone(id);
        else slot.release();
        return false;
      }
      if (this.#closed) {
        await this.#killAndClose(id, sandbox);
        slot.release();
        return false;
      }
      const seed = this.#seedOf(key);
      if (
        this.#threads.has(threadKeyText(key)) ||
        this.#warm.entries().some((e) => e.value.seed === seed)
      ) {
        // The thread got a sandbox meanwhile: this one is a duplicate, handled on a later pass.
        await this.#releaseLease(id);
        await sandbox.close();
        slot.release();
        return false;
      }
      // Parked warm, not active: nobody is using it yet. Its thread reclaims it on the next
      // acquire, and until then the idle checker and eviction can reap it like any warm VM.
      await this.#pushTimeout(remote);
      if (this.#warm.put(id, { seed, key }) === undefined) {
        await this.#killAndClose(id, sandbox);
        slot.release();
        return false;
      }
      slot.commit();
      await sandbox.close();
      return true;
    } finally {
      this.#intent.delete(id);
      this.#unownedRemoteOps.delete(id);
      if (!slot.done) slot.release();
    }
  }

  async #reapAfter(
    info: E2BSandboxInfo,
    graceMs: number,
    orphan: boolean,
  ): Promise<'killed' | 'deferred'> {
    if (this.#reapVerdict(info, graceMs, orphan).kind !== 'due') return 'deferred';
    return (await this.#reapKill(info.sandboxId)).outcome === 'killed' ? 'killed' : 'deferred';
  }

  /**
   * The age rule of reaping, shared by reconciliation and `reapOrphans`: never a VM this instance
   * tracks; an orphan's age counts from its creation tag, a duplicate's (and an untagged orphan's)
   * from this instance's first sighting, so a VM a peer has just created and not yet published
   * gets the whole grace. Records the first sighting.
   */
  #reapVerdict(info: E2BSandboxInfo, graceMs: number, orphan: boolean): ReapVerdict {
    const id = info.sandboxId;
    if (this.#isTrackedLocally(id)) return { kind: 'tracked' };
    const now = this.#clock.now();
    const first = this.#firstSeen.get(id) ?? now;
    this.#firstSeen.set(id, first);
    const created = orphan ? createdAtMs(info) : undefined;
    const ageMs = created !== undefined ? now - created : now - first;
    if (ageMs < graceMs) {
      return { kind: 'young', ageMs, graceMs, from: created !== undefined ? 'created' : 'seen' };
    }
    return { kind: 'due' };
  }

  /**
   * Kills a VM the age rule made due: only under a `del:` claim (a live peer's lease, or a store
   * that cannot answer, keeps it) and the held teardown marker; the ledger slot is released only
   * after the control plane confirmed the kill.
   */
  async #reapKill(id: string): Promise<ReapKill> {
    // Re-checked here: a caller may have decided before an await that let this instance take it up.
    if (this.#isTrackedLocally(id)) return { outcome: 'tracked' };
    // Reconciliation and `reapOrphans` of one instance share the `del:` marker; one kill suffices.
    if (this.#reaping.has(id)) return { outcome: 'busy' };
    this.#reaping.add(id);
    try {
      const claim = await this.#claimForDestroyOutcome(id);
      if (claim.outcome !== 'claimed') return claim;
      return await this.#heldTeardown(id, async (): Promise<ReapKill> => {
        try {
          const remote = await this.#sdk(() => this.#client.connect(id));
          try {
            const killed = await remote.kill();
            if (!killed) return { outcome: 'unconfirmed' };
          } finally {
            await remote.close().catch(() => undefined);
          }
          this.#firstSeen.delete(id);
          await this.#ledgerRelease(id);
          return { outcome: 'killed' };
        } catch (error) {
          this.#logger.info('Reaping an e2b sandbox failed; deferred', {
            sandboxId: id,
            error: errorMessage(error),
          });
          return { outcome: 'failed', error };
        }
      });
    } finally {
      this.#reaping.delete(id);
    }
  }

  // ------------------------------------------------------------------------------------------
  // CLI capabilities (`sbx ls`, `sbx gc`)

  /**
   * Every VM of this provider tag and ledger, within the reconciliation budgets, with this
   * instance's view (`active` / `warm`) or else the control plane's state. Reads only: nothing is
   * probed, claimed or killed.
   */
  async listSandboxes(options: E2BListSandboxesOptions = {}): Promise<E2BSandboxSummary[]> {
    const deadline = this.#clock.now() + this.settings.reconciliation.maxSeconds * 1000;
    const inventory = await this.#inspectInventory(deadline, options.signal);
    return inventory.entries.map((info): E2BSandboxSummary => {
      const id = info.sandboxId;
      const active = this.#active.get(id);
      const warm = active === undefined ? this.#warm.get(id) : undefined;
      const key = active?.key ?? warm?.value.key ?? taggedThread(info);
      const updatedAt = isoTime(
        warm !== undefined ? warm.releasedAt : (createdAtMs(info) ?? info.startedAt?.getTime()),
      );
      return {
        id,
        ...(key !== undefined ? { userId: key.userId, threadId: key.threadId } : {}),
        state: active !== undefined ? 'active' : warm !== undefined ? 'warm' : info.state,
        ...(updatedAt !== undefined ? { updatedAt } : {}),
        location: info.templateId ? `e2b:${info.templateId}` : 'e2b',
        ...specLabelsOf(info),
      };
    });
  }

  /**
   * Kills orphans and duplicates by reconciliation's own rules, through the same code (canonical
   * choice, age rule, claimed kill): never a VM this instance tracks, nor a thread's canonical
   * VM; duplicates after `reconciliation_grace_seconds` from this instance's first sighting,
   * untagged orphans after `reconciliation_orphan_ttl_seconds` from their creation tag; every kill
   * under a `del:` claim (a live peer's lease, or a store that cannot answer, keeps the VM) and
   * the held teardown marker. Nothing is adopted. A fresh process has seen no duplicate before, so unless
   * `waitForGrace` is `false` it waits out the grace on the provider's clock and looks again.
   * `dryRun` makes the same looks (including the liveness probes that pick each thread's
   * canonical VM) and predicts each claim from the store's read-only owner peek.
   */
  async reapOrphans(options: E2BReapOrphansOptions = {}): Promise<E2BOrphanReapReport> {
    const { signal } = options;
    const dryRun = options.dryRun === true;
    let look = await this.#reapLook(signal);
    let waitMs = 0;
    for (const d of look.values()) if (d.kind === 'wait') waitMs = Math.max(waitMs, d.remainingMs);
    if (waitMs > 0 && options.waitForGrace !== false) {
      await this.#sleep(waitMs, signal);
      this.#assertOpen();
      // Listed and decided again: a VM gone meanwhile is nobody's to reap, and a thread whose
      // canonical VM died meanwhile may now have its former duplicate as the canonical one.
      look = await this.#reapLook(signal);
    }
    const reaped: string[] = [];
    const kept: { id: string; reason: string }[] = [];
    for (const [id, decision] of look) {
      throwIfAborted(signal);
      if (decision.kind !== 'reap') {
        kept.push({ id, reason: decision.reason });
        continue;
      }
      const reason = dryRun ? await this.#wouldKeep(id) : await this.#reapOrKeep(id);
      if (reason === undefined) reaped.push(id);
      else kept.push({ id, reason });
    }
    if (reaped.length > 0) {
      this.#logger.info(
        dryRun ? 'E2B sandboxes that would be reaped' : 'Reaped orphaned e2b sandboxes',
        { reaped },
      );
    }
    return { reaped, kept };
  }

  /** The inventory an inspection reads; a listing that failed outright is an error, not "none". */
  async #inspectInventory(
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<RemoteInventory> {
    this.#assertOpen();
    throwIfAborted(signal);
    await this.ready();
    // After an in-flight reconciliation pass, so a VM it is adopting is not caught half-way.
    await this.#reconciling?.catch(() => undefined);
    throwIfAborted(signal);
    const inventory = await this.#listOurs(await this.#stores_(), deadline);
    throwIfAborted(signal);
    if (inventory.error !== undefined && inventory.entries.length === 0) {
      throw new SandboxRuntimeError(
        `Listing e2b sandboxes failed: ${errorMessage(inventory.error)}`,
        { cause: inventory.error },
      );
    }
    if (!inventory.complete) {
      this.#logger.warn('The e2b sandbox listing is incomplete; VMs beyond it are left out', {
        listed: inventory.entries.length,
        budgetExhausted: inventory.budgetExhausted,
      });
    }
    return inventory;
  }

  /** One look: every listed VM's fate under the reconciliation rules, in listing order. */
  async #reapLook(signal: AbortSignal | undefined): Promise<Map<string, ReapDecision>> {
    const r = this.settings.reconciliation;
    const deadline = this.#clock.now() + r.maxSeconds * 1000;
    const inventory = await this.#inspectInventory(deadline, signal);
    const decisions = new Map<string, ReapDecision>();
    // Placeholders keep the listing order; every entry is decided below.
    for (const info of inventory.entries) {
      decisions.set(info.sandboxId, { kind: 'keep', reason: 'undecided' });
    }
    const keep = (info: E2BSandboxInfo, reason: string) =>
      decisions.set(info.sandboxId, { kind: 'keep', reason });
    const { groups, orphans } = groupByThread(inventory.entries);
    for (const { key, infos } of groups) {
      throwIfAborted(signal);
      const thread = `${key.userId}/${key.threadId}`;
      const plan = await this.#planGroup(key, infos, deadline);
      if (plan.adoptable !== undefined) {
        await plan.adoptable.remote.close().catch(() => undefined);
        keep(plan.adoptable.info, `the canonical sandbox of thread ${thread}`);
      }
      if (plan.localCanonical !== undefined) {
        keep(plan.localCanonical, this.#trackedReason(plan.localCanonical.sandboxId));
      }
      for (const info of plan.dead) {
        keep(
          info,
          'did not answer its liveness probe: reconciliation leaves it to its E2B timeout',
        );
      }
      for (const info of plan.unprobed) {
        keep(info, 'not probed: the reconciliation_max_seconds budget ran out');
      }
      for (const info of plan.duplicates) {
        const root = skillsRootOf(info, DEFAULT_SKILLS_ROOT);
        const what =
          root === this.settings.skillsRoot
            ? `duplicate of thread ${thread}`
            : `prepared for skills root ${root} (thread ${thread})`;
        const d = this.#ageDecision(info, r.graceSeconds * 1000, false, what);
        decisions.set(info.sandboxId, d);
      }
    }
    for (const info of orphans) {
      decisions.set(
        info.sandboxId,
        this.#ageDecision(info, r.orphanTtlSeconds * 1000, true, 'no user/thread tags'),
      );
    }
    this.#forgetUnlisted(inventory);
    return decisions;
  }

  #ageDecision(info: E2BSandboxInfo, graceMs: number, orphan: boolean, what: string): ReapDecision {
    const verdict = this.#reapVerdict(info, graceMs, orphan);
    if (verdict.kind === 'tracked') {
      return { kind: 'keep', reason: this.#trackedReason(info.sandboxId) };
    }
    if (verdict.kind === 'due') return { kind: 'reap' };
    const setting = orphan ? 'reconciliation_orphan_ttl_seconds' : 'reconciliation_grace_seconds';
    const since = verdict.from === 'created' ? 'since its creation tag' : 'since first seen';
    const reason = `${what}: inside the ${wholeSeconds(graceMs)} s ${setting} (${wholeSeconds(verdict.ageMs)} s ${since})`;
    // Only a duplicate's grace is short and counted from a sighting that waiting can age.
    return orphan
      ? { kind: 'keep', reason }
      : { kind: 'wait', remainingMs: graceMs - verdict.ageMs, reason };
  }

  #trackedReason(id: string): string {
    if (this.#active.has(id)) return 'active in this instance';
    if (this.#warm.has(id)) return 'warm in this instance';
    if (this.#slots.tombstones.has(id))
      return 'tombstoned in this instance (its kill is retried here)';
    return 'in flight in this instance (being created, adopted or handed over)';
  }

  /** Kills a due VM; `undefined` once killed, else the rule that kept it. */
  async #reapOrKeep(id: string): Promise<string | undefined> {
    const result = await this.#reapKill(id);
    switch (result.outcome) {
      case 'killed':
        return undefined;
      case 'tracked':
        return this.#trackedReason(id);
      case 'busy':
        return 'being reaped by this instance already';
      case 'refused': {
        const holder = await this.#peekOwner(id);
        return holder !== undefined && !('error' in holder)
          ? holderReason(holder)
          : 'claim for destroy refused: another instance holds its lease';
      }
      case 'unknown':
        return `the ownership store cannot answer (${errorMessage(result.error)}): counted as owned by a peer`;
      case 'unconfirmed':
        return 'E2B did not confirm the kill (it may already be gone); its ledger slot is left to reconciliation';
      case 'failed':
        return `the kill failed (${errorMessage(result.error)}); it may still run`;
    }
  }

  /** The dry run's `#reapOrKeep`: predicts the `del:` claim from the read-only owner peek. */
  async #wouldKeep(id: string): Promise<string | undefined> {
    if (this.#isTrackedLocally(id)) return this.#trackedReason(id);
    if (this.#reaping.has(id)) return 'being reaped by this instance already';
    const holder = await this.#peekOwner(id);
    if (holder === undefined) return undefined;
    if ('error' in holder) {
      return `the ownership store cannot answer (${errorMessage(holder.error)}): counted as owned by a peer`;
    }
    // A destroy claim succeeds over our own lease in either state.
    if (holder.ownerId === (await this.#stores_()).ownership.ownerId) return undefined;
    return holderReason(holder);
  }

  async #peekOwner(id: string): Promise<LeaseHolder | { error: unknown } | undefined> {
    const { ownership } = await this.#stores_();
    try {
      return await ownership.owner(id);
    } catch (error) {
      this.#logger.warn('Reading the owner of an e2b sandbox failed', {
        sandboxId: id,
        error: errorMessage(error),
      });
      return { error };
    }
  }

  /** Waits on the provider's clock; ref'd (core's `sleep`), since in a one-shot CLI process nothing else may be. */
  #sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return sleep(ms, { clock: this.#clock, signal });
  }

  // ------------------------------------------------------------------------------------------
  // shutdown

  async #doShutdown(): Promise<void> {
    this.#closed = true;
    if (this.#renewTimer) this.#clock.clearTimeout(this.#renewTimer);
    if (this.#reconcileTimer) this.#clock.clearTimeout(this.#reconcileTimer);
    await this.#warm.stop();
    const active = [...this.#active.entries()];
    const parked = new Set<string>([
      ...this.#warm.ids(),
      ...this.#slots.tombstones.keys(),
      ...this.#ownedRemoteOps,
    ]);
    // Ours to kill: the leases held, and every warm entry and tombstone. A warm VM whose eviction
    // kill failed, or a tombstone, is no longer in `#owned` (the held teardown dropped it when its
    // kill ended), yet nothing else will ever kill it: left alone it runs until its E2B timeout
    // and holds a ledger slot. The claim below still keeps a VM a peer has taken since.
    const owned = new Set([...this.#owned, ...this.#warm.ids(), ...this.#slots.tombstones.keys()]);
    this.#active.clear();
    this.#threads.clear();
    for (const id of this.#warm.ids()) this.#warm.forget(id);
    this.#ownedRemoteOps.clear();
    this.#unownedRemoteOps.clear();
    this.#slots.clear();
    this.#notify();
    this.#serializer.close();
    let stores: Stores | undefined;
    try {
      stores = await this.#stores_();
    } catch {
      stores = undefined;
    }
    for (const [id, entry] of active) {
      parked.delete(id);
      if (stores !== undefined && owned.has(id)) await this.#killAndClose(id, entry.sandbox);
      else await entry.sandbox.close();
    }
    for (const id of parked) {
      if (stores === undefined || !owned.has(id) || !(await this.#claimForDestroy(id))) continue;
      await this.#heldTeardown(id, async () => {
        try {
          const remote = await this.#client.connect(id);
          try {
            await remote.kill();
            await this.#ledgerRelease(id);
          } finally {
            await remote.close().catch(() => undefined);
          }
        } catch (error) {
          if (!isSandboxGoneError(error)) {
            this.#logger.warn('Killing an e2b sandbox at shutdown failed', {
              sandboxId: id,
              error: errorMessage(error),
            });
          }
        }
      });
    }
    await this.#reconciling?.catch(() => undefined);
    if (stores?.ownsOwnership) await stores.ownership.close().catch(() => undefined);
    if (stores?.ownsCapacity) await stores.capacity?.close().catch(() => undefined);
  }

  // ------------------------------------------------------------------------------------------
  // plumbing

  #assertOpen(): void {
    if (this.#closed) throw this.#closedError();
  }

  #closedError(): ProviderClosedError {
    return new ProviderClosedError('E2BSandboxProvider has been shut down');
  }

  #serializerKey(key: ThreadKey): string {
    return serializerKey(key.userId, key.threadId, this.settings.skillsRoot, key.spec);
  }

  #seedOf(key: ThreadKey): string {
    return deriveSandboxScopeToken({
      userId: key.userId,
      threadId: key.threadId,
      scope: identityScopesFor({ skillsContainerPath: this.settings.skillsRoot }),
    });
  }

  #connectOptions(): { timeoutMs?: number } {
    return this.settings.idleTimeoutSeconds > 0
      ? { timeoutMs: this.settings.idleTimeoutSeconds * 1000 }
      : {};
  }

  #adapter(id: string, remote: E2BRemoteSandbox): E2BSandbox {
    return new E2BSandbox(id, remote, {
      homeDir: this.settings.homeDir,
      defaultCommandTimeoutMs: this.settings.commandTimeoutMs,
      logger: this.#logger,
    });
  }

  /**
   * Runs one SDK lifecycle call inside the bounded pool. After shutdown (pool closed) teardown
   * calls run directly: a kill must never be refused for lack of a pool.
   */
  async #sdk<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#serializer.closed) return fn();
    try {
      return await this.#serializer.run(fn);
    } catch (error) {
      if (error instanceof SerializerClosedError) return fn();
      throw error;
    }
  }

  #stores_(): Promise<Stores> {
    this.#stores ??= this.#openStores();
    return this.#stores;
  }

  async #openStores(): Promise<Stores> {
    const init = this.#init;
    const ownsOwnership = init.ownershipStore === undefined;
    const ownership =
      init.ownershipStore ??
      (await createOwnershipStore(this.ownership, {
        // Without a host logger, core prints its required single-instance warning to the console.
        logger: init.logger,
        env: init.env ?? process.env,
      }));
    let capacity: CapacityStore | undefined;
    let ownsCapacity = false;
    if (init.capacityStore === null) capacity = undefined;
    else if (init.capacityStore !== undefined) capacity = init.capacityStore;
    else {
      try {
        capacity = await createCapacityStore(this.ownership, {
          hardLimit: this.settings.capacityLimit,
          logger: this.#logger,
          env: init.env ?? process.env,
        });
        ownsCapacity = capacity !== undefined;
      } catch (error) {
        if (ownsOwnership) await ownership.close().catch(() => undefined);
        throw error;
      }
    }
    const ledgerKey =
      capacity === undefined
        ? undefined
        : (init.capacityLedgerKey ?? `${this.ownership.keyPrefix.replace(/:+$/, '')}:e2b-capacity`);
    return { ownership, capacity, ledgerKey, ownsOwnership, ownsCapacity };
  }
}

/** Factory form for `use: "@sbx/e2b"` hosts that prefer functions. */
export function createE2BProvider(init: E2BProviderInit): E2BSandboxProvider {
  return new E2BSandboxProvider(init);
}
