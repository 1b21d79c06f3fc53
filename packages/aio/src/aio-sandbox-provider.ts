import { randomUUID } from 'node:crypto';
import {
  errorMessage,
  AbortedError,
  AcquireSerializer,
  InvalidArgumentError,
  ProviderClosedError,
  RenewOutcome,
  SandboxBeingDestroyedError,
  SandboxIdentityCollisionError,
  SandboxProvider,
  SandboxProviderEventEmitter,
  SandboxRuntimeError,
  SerializerClosedError,
  WarmPool,
  assertSafePathSegment,
  consoleLogger,
  createOwnershipStore,
  deriveSandboxScopeToken,
  specIdentityScope,
  type SandboxSpec,
  type SandboxSpecPolicy,
  type SandboxSpecSupport,
  discardSandboxLeaseManager,
  getSandboxLeaseManager,
  identityScopesFor,
  isSbxError,
  isValidSandboxId,
  resolveEffectiveUserId,
  resolveOwnershipConfig,
  serializerKey,
  silentLogger,
  systemClock,
  withHeldTeardownLease,
  sleep,
} from '@sbx/core';
import {
  DEFAULT_SPEC_POLICY,
  NO_SPEC_SUPPORT,
  checkSandboxSpec,
  leaseTtlMilliseconds,
} from '@sbx/core/internal';
import type {
  AcquireOptions,
  ListSandboxesOptions,
  OrphanReapReport,
  ReapOrphansOptions,
  SandboxSummary,
  AcquirePath,
  Clock,
  ClockTimer,
  IdleTeardownReservation,
  LeaseHolder,
  Logger,
  OwnershipStore,
  ResolvedOwnershipConfig,
  Sandbox,
  SandboxConfig,
  SandboxCounts,
  SandboxProviderCounts,
  SandboxProviderEventListener,
  SandboxProviderEvents,
  TeardownReservation,
  WarmEntry,
  WarmPoolDestroyReason,
} from '@sbx/core';
import { AioSandbox } from './aio-sandbox.js';
import { aioRequestHeaders } from './aio-http.js';
import { resolveAioSettings } from './aio-provider-config.js';
import type { AioSettings } from './aio-provider-config.js';
import { LocalContainerBackend } from './local-container-backend.js';
import { waitForSandboxReady } from './readiness.js';
import { RemoteSandboxBackend } from './remote-sandbox-backend.js';
import type { SandboxBackend, SandboxHealth } from './sandbox-backend.js';
import type { SandboxInfo } from './sandbox-info.js';
import { planSandboxMounts, prepareSandboxMounts } from './sandbox-mounts.js';

export interface AioSandboxProviderInit {
  readonly config: SandboxConfig;
  readonly logger?: Logger | undefined;
  /** Where sandboxes run. Default: remote when `provisioner_url` is set, else local containers. */
  readonly backend?: SandboxBackend | undefined;
  /** Default: built from `sandbox.ownership` (memory, or Redis via @sbx/ownership-redis). */
  readonly ownershipStore?: OwnershipStore | undefined;
  /** Drives renewal, reconciliation, the idle checker and every timestamp. Default: system clock. */
  readonly clock?: Clock | undefined;
  /**
   * The host application's stream bridge, if it has one: a Redis bridge means a multi-instance
   * deployment, so ownership follows it to Redis (unless `sandbox.ownership` says otherwise).
   */
  readonly streamBridge?: { readonly type?: string; readonly redisUrl?: string } | undefined;
  /** Environment for the ownership and host-base-dir resolution. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
  /** Builds the client of a sandbox. Default: an `AioSandbox` on `info.sandboxUrl`. */
  readonly createClient?: ((info: SandboxInfo) => Sandbox) | undefined;
  /** Whether a new sandbox answers. Default: polls `GET /v1/sandbox` for `ready_timeout_seconds`. */
  readonly readinessProbe?: ((info: SandboxInfo) => Promise<boolean>) | undefined;
  /** Run the start-up reconciliation and the timers. Default true. */
  readonly background?: boolean | undefined;
}

/** What one reconciliation pass did. */
export interface ReconcileSummary {
  /** Untracked containers adopted into the warm pool. */
  adopted: string[];
  /** Owned by a peer, or the store could not answer the claim. */
  skipped: string[];
  /** Still inside their grace, or being torn down here. */
  deferred: string[];
  /** Containers the backend listed. */
  total: number;
  /** The pass stopped at its item or time budget; the rest waits for the next pass. */
  budgetExhausted: boolean;
}

/**
 * One listed container (core's `SandboxSummary`). `state` is `active` / `warm` when this instance
 * tracks it, otherwise the ownership store's view: `owned by <owner>`, `being destroyed by
 * <owner>`, `unowned`, or `owner unknown`; `updatedAt` is the last use of an active sandbox or when
 * a warm one was parked; `location` is the container name, else the sandbox URL.
 */
export type AioSandboxSummary = SandboxSummary;

export type AioListSandboxesOptions = ListSandboxesOptions;

export interface AioReapOrphansOptions extends ReapOrphansOptions {
  /**
   * How long an untracked container must stay unowned before it is reaped, on a store with
   * cross-process visibility. Default: the lease TTL (the reconciliation grace).
   */
  graceMs?: number | undefined;
}

export type AioOrphanReapReport = OrphanReapReport;

/** The in-memory state, for diagnostics and tests. */
export interface AioProviderSnapshot {
  readonly active: readonly string[];
  /** Warm ids, oldest first. */
  readonly warm: readonly string[];
  /** Identity key → sandbox id. */
  readonly threads: Readonly<Record<string, string>>;
}

interface SandboxIdentity {
  readonly userId: string;
  readonly threadId: string;
  readonly explicitSkillPolicy: boolean;
  /** The acquire's spec, checked; its image and resources are part of the id. */
  readonly spec?: SandboxSpec | undefined;
}

interface ActiveEntry {
  readonly client: Sandbox;
  readonly info: SandboxInfo;
  /** Undefined for an anonymous sandbox. */
  readonly identity: SandboxIdentity | undefined;
}

interface WarmValue {
  readonly info: SandboxInfo;
  /** Undefined: unknown (adopted by reconciliation) or anonymous. */
  readonly identity: SandboxIdentity | undefined;
}

/** What an untrack removed; undefined when a stale `expected` info made it a no-op. */
type Removed = { client: Sandbox | undefined; info: SandboxInfo | undefined } | undefined;

function identityKey(identity: SandboxIdentity): string {
  // A spec that changes what the sandbox is (image, resources) makes it another sandbox of the
  // thread: reuse and reclaim must not hand out one made to another spec.
  const specScope = specIdentityScope(identity.spec);
  return specScope
    ? serializerKey(
        identity.userId,
        identity.threadId,
        identity.explicitSkillPolicy,
        specScope.value,
      )
    : serializerKey(identity.userId, identity.threadId, identity.explicitSkillPolicy);
}

function describeIdentity(identity: SandboxIdentity | undefined): string {
  if (identity === undefined) return '(anonymous)';
  const policy = identity.explicitSkillPolicy ? ', explicit skill policy' : '';
  const spec = specIdentityScope(identity.spec) ? ', own spec' : '';
  return `(user=${identity.userId}, thread=${identity.threadId}${policy}${spec})`;
}

function sameIdentity(a: SandboxIdentity, b: SandboxIdentity): boolean {
  return (
    a.userId === b.userId &&
    a.threadId === b.threadId &&
    a.explicitSkillPolicy === b.explicitSkillPolicy
  );
}

function errorText(err: unknown): string {
  return errorMessage(err);
}

type GraceVerdict =
  | { readonly kind: 'adoptable' }
  | { readonly kind: 'waiting' }
  | { readonly kind: 'owned'; readonly holder: LeaseHolder }
  | { readonly kind: 'unknown'; readonly error: string };

type UntrackedStopOutcome = 'stopped' | 'tracked' | 'owned' | 'failed';

const UNTRACKED_STOP_REASONS: Record<Exclude<UntrackedStopOutcome, 'stopped'>, string> = {
  tracked: 'taken up by this instance meanwhile',
  owned: 'claim refused: another instance owns it, or the ownership store cannot answer',
  failed: 'the stop failed (see the log); the container may still run',
};

function identityFields(
  identity: SandboxIdentity | undefined,
): { userId: string; threadId: string } | Record<string, never> {
  return identity === undefined ? {} : { userId: identity.userId, threadId: identity.threadId };
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError(undefined, { cause: signal.reason });
}

function isBeingDestroyed(err: unknown): err is SandboxBeingDestroyedError {
  return isSbxError(err) && err.code === SandboxBeingDestroyedError.CODE;
}

/**
 * Sandboxes in all-in-one sandbox containers (local Docker/Podman, or Pods behind a provisioner):
 * one per (user, thread), parked warm between turns, coordinated across gateway instances by an
 * ownership lease store. See the package README for configuration and failure semantics.
 *
 * Concurrency model. Node runs one event loop, so a synchronous stretch of code (no `await`) is
 * this provider's critical section. Every store call, backend call and readiness poll is an await
 * point where another acquire or a reaper can interleave; every guard below exists for one of
 * those points, and every check taken before one is taken again after it. Reapers (idle checker,
 * renewal, warm eviction and expiry, the unhealthy drop, reconciliation) decide outside any lock,
 * so each relies on:
 * - the teardown reservation (the warm pool's `reserve`, usable for any id), taken in the same
 *   synchronous block as its "still reapable?" check and refused by every promote path;
 * - the acquire epoch and the intent mark, which keep a renewal that saw `LOST` from forgetting a
 *   sandbox an acquire has just re-taken;
 * - the `del:` lease state, held by a heartbeat for the whole of every stop.
 */
export class AioSandboxProvider
  extends SandboxProvider
  implements SandboxProviderEvents, SandboxProviderCounts
{
  readonly settings: AioSettings;
  readonly ownership: ResolvedOwnershipConfig;
  readonly backend: SandboxBackend;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #serializer: AcquireSerializer;
  readonly #events: SandboxProviderEventEmitter;
  readonly #createClient: (info: SandboxInfo) => Sandbox;
  readonly #readinessProbe: (info: SandboxInfo) => Promise<boolean>;
  readonly #specPolicy: SandboxSpecPolicy;
  readonly #storePromise: Promise<OwnershipStore>;
  readonly #ownsStore: boolean;
  readonly #ownsBackend: boolean;
  readonly #leaseTtlMs: number;
  readonly #renewalMs: number;
  readonly #pool: WarmPool<WarmValue>;
  #store: OwnershipStore | undefined;

  readonly #active = new Map<string, ActiveEntry>();
  /** Identity key → active id. */
  readonly #threads = new Map<string, string>();
  readonly #lastActivity = new Map<string, number>();
  readonly #unownedSince = new Map<string, number>();
  readonly #epoch = new Map<string, number>();
  #epochCounter = 0;
  /** Intent marks: a count per id, so concurrent publishes cannot clear each other's mark. */
  readonly #inflight = new Map<string, number>();
  readonly #acquires = new Set<Promise<unknown>>();

  #closed = false;
  #shutdown: Promise<void> | undefined;
  #startup: Promise<void>;
  #startupReconcile: Promise<unknown> | undefined;
  #renewTimer: ClockTimer | undefined;
  /**
   * Ids inside a create's readiness wait (from the backend's create until registration begins):
   * the container is listed, untracked and unowned, which is exactly what reconciliation and the
   * orphan reaper take. They must not (reconciliation defers them), or a create at the cap evicts
   * it as a warm entry and the first acquire fails or hands out a stopped container. The
   * register's publish window after it is covered by the register's own re-checks.
   */
  readonly #creating = new Set<string>();
  /**
   * Ids whose renewal heard `LOST` (a peer holds the lease) while the entry could not be
   * forgotten (a reaper held it). A later claim of such an id by a reaper must not be taken as
   * leave to stop it: after a store flush the peer's lease is simply absent, so the claim would
   * be granted and the container stopped under the peer's running command. The reaper forgets
   * the entry instead; the container stays with the peer.
   */
  readonly #supersededHere = new Set<string>();
  /** Set by `reset()`: no background work runs again (acquires are refused by the serializer). */
  #detached = false;
  #reconcileTimer: ClockTimer | undefined;
  #renewing: Promise<void> | undefined;
  #reconciling: Promise<ReconcileSummary> | undefined;
  #backgroundStarted = false;

  constructor(init: AioSandboxProviderInit) {
    super();
    if (!init || typeof init !== 'object' || !init.config) {
      throw new InvalidArgumentError('AioSandboxProvider needs { config }');
    }
    const env = init.env ?? process.env;
    this.#logger = init.logger ?? silentLogger;
    this.#clock = init.clock ?? systemClock;
    this.settings = resolveAioSettings(init.config, env, this.#logger);
    this.#specPolicy = init.config.specPolicy ?? DEFAULT_SPEC_POLICY;
    this.ownership = resolveOwnershipConfig(init.config, env, {
      ...(init.streamBridge ? { streamBridge: init.streamBridge } : {}),
    });
    this.#leaseTtlMs = leaseTtlMilliseconds(this.ownership.leaseTtlSeconds);
    this.#renewalMs = Math.max(1, Math.round(this.ownership.renewalIntervalSeconds * 1000));
    this.#ownsBackend = init.backend === undefined;
    this.backend = init.backend ?? this.#buildBackend();
    this.#events = new SandboxProviderEventEmitter({ logger: this.#logger });
    this.#serializer = new AcquireSerializer({ name: 'aio-sandbox-acquire', logger: this.#logger });
    this.#createClient =
      init.createClient ??
      ((info) =>
        new AioSandbox(info.sandboxId, {
          baseUrl: info.sandboxUrl,
          logger: this.#logger,
          ...(this.settings.apiKey ? { apiKey: this.settings.apiKey } : {}),
          headers: this.settings.headers,
        }));
    this.#readinessProbe = init.readinessProbe ?? ((info) => this.#defaultReadiness(info));
    this.#pool = new WarmPool<WarmValue>({
      destroy: (entry, reason) => this.#destroyWarm(entry, reason),
      idleTimeoutSeconds: this.settings.idleTimeoutSeconds,
      checkIntervalSeconds: this.settings.idleCheckIntervalSeconds,
      replicas: this.settings.replicas,
      // Active and warm are exclusive; a warm entry for an active id is stale and not the
      // warm reaper's to stop.
      stillReapable: (entry) => !this.#active.has(entry.id),
      onIdleCheck: () => this.#cleanupIdleActive(),
      clock: this.#clock,
      logger: this.#logger,
      name: 'aio',
    });

    this.#ownsStore = init.ownershipStore === undefined;
    if (init.ownershipStore !== undefined) {
      const store = init.ownershipStore;
      if (!store.supportsCrossProcess) {
        // The spec requires this warning even from an otherwise silent library.
        (init.logger ?? consoleLogger()).warn(
          'sandbox ownership store is single-instance only: gateway instances or workers sharing a container backend cannot see each other\u2019s leases; configure sandbox.ownership.type: redis for multi-instance deployments',
          { owner_id: store.ownerId },
        );
      }
      this.#storePromise = Promise.resolve(store);
    } else {
      this.#storePromise = createOwnershipStore(this.ownership, {
        env,
        ...(init.logger ? { logger: init.logger } : {}),
      });
    }
    const background = init.background ?? true;
    this.#startup = this.#storePromise.then(
      (store) => {
        this.#store = store;
        if (background && !this.#closed) this.#startBackground();
      },
      (error: unknown) => {
        this.#logger.error('AioSandboxProvider: the ownership store could not be created', {
          error: errorText(error),
        });
      },
    );
  }

  // --------------------------------------------------------------------------------------------
  // capabilities and diagnostics

  /**
   * Thread user-data directories are bind-mounted (uploads need no sync): `thread_data_mounts`
   * when configured, else what the backend says (local containers yes, a provisioner no). A
   * false positive leaves uploads invisible inside the sandbox.
   */
  override get usesThreadDataMounts(): boolean {
    return this.settings.threadDataMounts ?? this.backend.usesThreadDataMounts;
  }

  /** An explicit skill policy gets the thread's own projection mounts and its own identity. */
  override get supportsAgentSkillIsolation(): boolean {
    return true;
  }

  onEvent(listener: SandboxProviderEventListener): () => void {
    return this.#events.onEvent(listener);
  }

  sandboxCounts(): SandboxCounts {
    return { active: this.#active.size, warm: this.#pool.size };
  }

  /** Resolves once the ownership store is up and the start-up reconciliation has run. */
  async ready(): Promise<void> {
    await this.#storePromise;
    await this.#startup;
    await this.#startupReconcile;
  }

  /** The owner id this instance writes into leases. */
  async ownerId(): Promise<string> {
    return (await this.#storePromise).ownerId;
  }

  /** Lease TTL in milliseconds (renewal interval × multiplier): also the adoption grace. */
  get leaseTtlMs(): number {
    return this.#leaseTtlMs;
  }

  snapshot(): AioProviderSnapshot {
    return {
      active: [...this.#active.keys()],
      warm: this.#pool.ids(),
      threads: Object.fromEntries(this.#threads),
    };
  }

  /** Whether a teardown of `sandboxId` is in flight in this process. */
  isTearingDown(sandboxId: string): boolean {
    return this.#pool.isReserved(sandboxId);
  }

  // --------------------------------------------------------------------------------------------
  // acquire

  override async acquire(options: AcquireOptions = {}): Promise<string> {
    this.admit(options);
    if (this.#closed) throw new ProviderClosedError();
    if (this.#serializer.closed) throw new SerializerClosedError();
    if (options.threadId === undefined || options.threadId === null) {
      return this.#track(this.#acquireAnonymous());
    }
    const userId = assertSafePathSegment('userId', resolveEffectiveUserId(options.userId));
    const threadId = assertSafePathSegment('threadId', options.threadId);
    const spec = checkSandboxSpec(
      options.spec,
      this.specSupport,
      this.specPolicy,
      'AioSandboxProvider',
    );
    const identity: SandboxIdentity = {
      userId,
      threadId,
      explicitSkillPolicy: options.skillPolicy !== undefined,
      ...(spec ? { spec } : {}),
    };
    return this.#track(
      this.#serializer.hold(serializerKey(userId, threadId), () => this.#acquireThread(identity), {
        signal: options.signal,
      }),
    );
  }

  /**
   * Local containers honour an acquire's image (from `sandbox.spec.images`), resources and
   * labels; the provisioner API carries none of them, so a remote backend refuses every spec.
   */
  override get specSupport(): SandboxSpecSupport {
    if (this.backend.kind !== 'local') return NO_SPEC_SUPPORT;
    return {
      image: true,
      resources: ['memoryMb', 'cpus', 'pids', 'diskGb'],
      timeout: false,
      labels: true,
    };
  }

  protected override get specPolicy(): SandboxSpecPolicy {
    return this.#specPolicy;
  }

  /** The deterministic id of a thread's sandbox (policy-, skills-root- and spec-scoped). */
  sandboxIdFor(options: {
    userId?: string;
    threadId: string;
    explicitSkillPolicy?: boolean;
    spec?: SandboxSpec | undefined;
  }) {
    const specScope = specIdentityScope(options.spec);
    return deriveSandboxScopeToken({
      userId: resolveEffectiveUserId(options.userId),
      threadId: options.threadId,
      scope: [
        ...identityScopesFor({
          skillsContainerPath: this.settings.skillsRoot,
          explicitSkillPolicy: options.explicitSkillPolicy === true,
        }),
        ...(specScope ? [specScope] : []),
      ],
    });
  }

  #track<T>(work: Promise<T>): Promise<T> {
    this.#acquires.add(work);
    const done = () => this.#acquires.delete(work);
    work.then(done, done);
    return work;
  }

  async #acquireAnonymous(): Promise<string> {
    await this.#storePromise;
    const id = randomUUID().slice(0, 8);
    await this.#create(id, undefined);
    this.#emitAcquired(id, 'create');
    return id;
  }

  async #acquireThread(identity: SandboxIdentity): Promise<string> {
    await this.#storePromise;
    const key = identityKey(identity);
    const reused = await this.#reuse(key);
    if (reused !== undefined) return this.#emitAcquired(reused, 'reuse');

    const id = this.sandboxIdFor(identity);
    this.#checkIdentity(id, identity);
    const reclaimed = await this.#reclaim(key, id, identity);
    if (reclaimed !== undefined) return this.#emitAcquired(reclaimed, 'reclaim');

    const found = await this.#discover(id);
    if (found !== null) {
      await this.#registerDiscovered(key, identity, found);
      return this.#emitAcquired(id, 'discover');
    }
    await this.#create(id, identity);
    return this.#emitAcquired(id, 'create');
  }

  #emitAcquired(sandboxId: string, path: AcquirePath): string {
    this.#events.emit({ type: 'acquire', sandboxId, path });
    return sandboxId;
  }

  /** (a) The thread's active sandbox, if alive and still ours after re-publishing ownership. */
  async #reuse(key: string): Promise<string | undefined> {
    const id = this.#threads.get(key);
    if (id === undefined) return undefined;
    // Early-out: no health check or store call for an id whose teardown is under way.
    if (this.#pool.isReserved(id)) return undefined;
    const entry = this.#active.get(id);
    if (entry === undefined) {
      this.#threads.delete(key);
      return undefined;
    }
    const health = await this.#checkHealth(entry.info);
    if (health === 'dead') {
      await this.#dropUnhealthy(id, 'its container is gone or stopped', entry.info);
      return undefined;
    }
    if (this.#threads.get(key) !== id || !this.#active.has(id)) {
      if (this.#threads.get(key) === id) this.#threads.delete(key);
      return undefined;
    }
    this.#lastActivity.set(id, this.#clock.now());
    try {
      await this.#publish(id);
    } catch (err) {
      if (!isBeingDestroyed(err)) throw err;
      this.#logger.info(`Sandbox ${id} is being destroyed by another instance; starting afresh`);
      this.#forgetLost(id);
      return undefined;
    }
    // Re-taken after the round trip: a reaper may have reserved the id, or a renewal that saw
    // LOST before our intent mark may have forgotten it. Either way, fall through.
    if (this.#pool.isReserved(id) || !this.#active.has(id)) return undefined;
    return id;
  }

  /** (b) The thread's warm sandbox, if alive and still ours after publishing ownership. */
  async #reclaim(key: string, id: string, identity: SandboxIdentity): Promise<string | undefined> {
    const warm = this.#pool.get(id);
    if (warm === undefined) return undefined;
    this.#checkWarmIdentity(id, warm, identity);
    if (this.#pool.isReserved(id)) return undefined;
    // A container adopted without a published port cannot be reached; discovery may find one.
    if (!warm.value.info.sandboxUrl) return undefined;
    const health = await this.#checkHealth(warm.value.info);
    if (health === 'dead') {
      await this.#dropUnhealthy(id, 'its container is gone or stopped', warm.value.info);
      return undefined;
    }
    try {
      await this.#publish(id);
    } catch (err) {
      if (!isBeingDestroyed(err)) throw err;
      this.#logger.info(`Sandbox ${id} is being destroyed by another instance; starting afresh`);
      this.#forgetLost(id);
      return undefined;
    }
    if (this.#pool.isReserved(id)) return undefined;
    const current = this.#pool.get(id);
    if (current === undefined) return undefined;
    this.#checkWarmIdentity(id, current, identity);
    const client = this.#createClient(current.value.info);
    if (this.#pool.take(id, current) === undefined) {
      void this.#closeClient(client, id, 'reclaim');
      return undefined;
    }
    this.#install(id, client, current.value.info, identity, key);
    return id;
  }

  async #discover(id: string): Promise<SandboxInfo | null> {
    try {
      return await this.backend.discover(id);
    } catch (err) {
      // Unverifiable is not adoptable: fall through to create.
      this.#logger.warn(`Could not discover sandbox ${id}; creating instead`, {
        error: errorText(err),
      });
      return null;
    }
  }

  /** (c) A running sandbox this process did not track (a peer's, or a previous run's). */
  async #registerDiscovered(key: string, identity: SandboxIdentity, info: SandboxInfo) {
    const id = info.sandboxId;
    // Creating instead would collide with the container name that is still there.
    if (this.#pool.isReserved(id)) throw new SandboxBeingDestroyedError(id);
    this.#checkIdentity(id, identity);
    const client = this.#createClient(info);
    try {
      await this.#publish(id);
      if (this.#pool.isReserved(id)) throw new SandboxBeingDestroyedError(id);
      this.#checkIdentity(id, identity);
      this.#install(id, client, info, identity, key);
    } catch (err) {
      // The container is not ours to stop.
      await this.#closeClient(client, id, 'discover');
      throw err;
    }
  }

  /** (e) A new sandbox, ready and owned, or nothing at all. */
  async #create(id: string, identity: SandboxIdentity | undefined): Promise<void> {
    const mounts =
      identity === undefined
        ? []
        : await prepareSandboxMounts(
            planSandboxMounts({
              userId: identity.userId,
              threadId: identity.threadId,
              skillsRoot: this.settings.skillsRoot,
              explicitSkillPolicy: identity.explicitSkillPolicy,
              baseDir: this.settings.baseDir,
              hostBaseDir: this.settings.hostBaseDir,
            }),
            this.#logger,
          );
    await this.#pool.ensureCapacity(this.#active.size, id);
    let info: SandboxInfo;
    this.#creating.add(id);
    try {
      info = await this.#createReady(id, identity, mounts);
    } finally {
      this.#creating.delete(id);
    }
    // From here the register's own re-checks handle an adoption during its publish.
    await this.#registerCreated(info, identity);
  }

  /** The backend's create and the readiness wait (an unready container is torn down). */
  async #createReady(
    id: string,
    identity: SandboxIdentity | undefined,
    mounts: Awaited<ReturnType<typeof prepareSandboxMounts>>,
  ): Promise<SandboxInfo> {
    const spec = identity?.spec;
    const info = await this.backend.create({
      sandboxId: id,
      threadId: identity?.threadId ?? null,
      ...(identity ? { userId: identity.userId } : {}),
      ...(mounts.length > 0 ? { extraMounts: mounts } : {}),
      ...(spec?.image ? { image: spec.image } : {}),
      ...(spec?.resources ? { resources: spec.resources } : {}),
      ...(spec?.labels ? { labels: spec.labels } : {}),
    });
    let ready: boolean;
    try {
      ready = await this.#readinessProbe(info);
    } catch (err) {
      await this.#destroyUnready(id, info);
      throw err;
    }
    if (!ready) {
      await this.#destroyUnready(id, info);
      throw new SandboxRuntimeError(
        `Sandbox ${id} failed to become ready within timeout at ${info.sandboxUrl}`,
        { details: { sandbox_id: id } },
      );
    }
    return info;
  }

  async #registerCreated(info: SandboxInfo, identity: SandboxIdentity | undefined) {
    const id = info.sandboxId;
    let client: Sandbox | undefined;
    try {
      client = this.#createClient(info);
      if (identity) this.#checkIdentity(id, identity);
      await this.#publish(id);
      if (this.#pool.isReserved(id)) throw new SandboxBeingDestroyedError(id);
      if (identity) this.#checkIdentity(id, identity);
      this.#install(id, client, info, identity, identity ? identityKey(identity) : undefined);
    } catch (err) {
      // A sandbox whose ownership cannot be published is never handed out, nor left running
      // for reconciliation to adopt as an orphan. The refused take usually means a dead
      // destroyer's marker, which is not ours to honour with a held lease (stopped directly).
      this.#logger.error(`Could not register new sandbox ${id}; stopping it`, {
        error: errorText(err),
      });
      if (client) await this.#closeClient(client, id, 'create');
      try {
        await this.backend.destroy(info);
      } catch (destroyErr) {
        this.#logger.error(`Could not stop unregistered sandbox ${id}`, {
          error: errorText(destroyErr),
        });
      }
      throw err;
    }
  }

  /**
   * (f) Stops a new container that never became ready, unless another instance owns it: its
   * name is visible to peers for the whole readiness wait, and one of them may have discovered
   * and handed it out meanwhile.
   */
  async #destroyUnready(id: string, info: SandboxInfo): Promise<void> {
    const outcome = await this.#destroyUntracked(id, info);
    if (outcome === 'tracked') {
      this.#logger.warn(`Not stopping unready sandbox ${id}: it is tracked or being torn down`);
    } else if (outcome === 'owned') {
      this.#logger.warn(`Not stopping unready sandbox ${id}: another instance owns it`);
    } else if (outcome === 'failed') {
      this.#logger.error(`Could not stop unready sandbox ${id}`);
    }
  }

  /**
   * Stops a container no map tracks: reserved here (so no acquire or reconciliation here takes
   * it meanwhile), claimed for destroy (a peer's lease, or a store that cannot answer, keeps it),
   * stopped under a held teardown lease.
   */
  async #destroyUntracked(id: string, info: SandboxInfo): Promise<UntrackedStopOutcome> {
    const reservation = this.#pool.reserve(id, () => !this.#active.has(id) && !this.#pool.has(id));
    if (reservation === undefined) return 'tracked';
    try {
      if (!(await this.#claim(id, true))) return 'owned';
      try {
        await this.#heldTeardown(id, () => this.backend.destroy(info));
      } catch (err) {
        this.#logger.error(`Could not stop sandbox ${id}`, { error: errorText(err) });
        return 'failed';
      }
      return 'stopped';
    } finally {
      reservation.release();
    }
  }

  /** Active and warm are exclusive: a warm entry for an id that becomes active is dropped. */
  #install(
    id: string,
    client: Sandbox,
    info: SandboxInfo,
    identity: SandboxIdentity | undefined,
    key: string | undefined,
  ): void {
    if (this.#pool.has(id)) this.#pool.forget(id);
    // Published again by this instance: its own now, whatever a renewal heard before.
    this.#supersededHere.delete(id);
    const previous = this.#active.get(id);
    this.#active.set(id, { client, info, identity });
    if (key !== undefined) this.#threads.set(key, id);
    this.#lastActivity.set(id, this.#clock.now());
    if (previous !== undefined && previous.client !== client) {
      void this.#closeClient(previous.client, id, 'replace');
    }
  }

  /** Never hand one tenant's container to another, nor overwrite its warm entry. */
  #checkIdentity(id: string, requested: SandboxIdentity): void {
    const active = this.#active.get(id);
    if (active !== undefined) {
      const tracked = active.identity;
      if (tracked === undefined || !sameIdentity(tracked, requested)) {
        throw new SandboxIdentityCollisionError(
          id,
          describeIdentity(tracked),
          describeIdentity(requested),
        );
      }
    }
    const warm = this.#pool.get(id);
    if (warm !== undefined) this.#checkWarmIdentity(id, warm, requested);
  }

  /** Adopted warm entries (unknown identity) are reclaimable by whoever maps to the id. */
  #checkWarmIdentity(id: string, warm: WarmEntry<WarmValue>, requested: SandboxIdentity): void {
    const tracked = warm.value.identity;
    if (tracked !== undefined && !sameIdentity(tracked, requested)) {
      throw new SandboxIdentityCollisionError(
        id,
        describeIdentity(tracked),
        describeIdentity(requested),
      );
    }
  }

  // --------------------------------------------------------------------------------------------
  // get, release, destroy

  /** A pure in-memory lookup: no store, backend or other I/O (it runs on every tool call). */
  override get(sandboxId: string): Sandbox | undefined {
    const entry = this.#active.get(sandboxId);
    if (entry === undefined) return undefined;
    this.#lastActivity.set(sandboxId, this.#clock.now());
    return entry.client;
  }

  /**
   * End of turn: parks the sandbox warm (the container keeps running) and closes its client, then
   * refreshes the lease. Never throws for store problems; a lease lost to a peer forgets the
   * sandbox here without stopping it.
   */
  override async release(sandboxId: string): Promise<void> {
    // A teardown in flight owns the entry; untracking it here would leave that teardown with
    // nothing to stop.
    if (this.#pool.isReserved(sandboxId)) {
      this.#logger.debug(`Not parking sandbox ${sandboxId}: its teardown is in flight`);
      return;
    }
    const entry = this.#active.get(sandboxId);
    if (entry === undefined) {
      this.#logger.debug(`Release of unknown sandbox ${sandboxId} ignored`);
      return;
    }
    this.#active.delete(sandboxId);
    this.#dropThreadMappings(sandboxId);
    this.#lastActivity.delete(sandboxId);
    if (!this.#pool.has(sandboxId)) {
      this.#pool.put(sandboxId, { info: entry.info, identity: entry.identity });
    }
    await this.#closeClient(entry.client, sandboxId, 'release');
    if (this.#store === undefined || this.#closed) return;
    const epoch = this.#epoch.get(sandboxId) ?? 0;
    if (!(await this.#refresh(sandboxId))) {
      if (this.#forgetLost(sandboxId, epoch)) {
        this.#logger.warn(
          `Sandbox ${sandboxId} is owned by another instance now; forgot it (the container keeps running)`,
        );
      }
    }
  }

  /**
   * Stops a tracked sandbox under a held teardown lease. Refused (nothing stopped, the entry stays
   * tracked) when another instance holds its lease or the store cannot answer. A failed stop
   * propagates after the marker is released.
   */
  async destroy(sandboxId: string): Promise<void> {
    await this.#storePromise;
    await this.#destroyTracked(sandboxId, () => true);
  }

  async #destroyTracked(id: string, stillReapable: () => boolean): Promise<boolean> {
    let reservation = this.#pool.reserve(id, stillReapable);
    if (reservation === undefined) {
      this.#logger.debug(`Not destroying sandbox ${id}: not reapable or already being torn down`);
      return false;
    }
    try {
      if (this.#supersededHere.has(id)) {
        this.#logger.warn(
          `Not destroying sandbox ${id}: another instance took it over; forgetting it instead`,
        );
        reservation.release();
        if (this.#forgetLost(id)) this.#supersededHere.delete(id);
        return false;
      }
      // Claim before untracking: a refused claim must not leave a running container that no map
      // knows about.
      if (!(await this.#claim(id, true))) {
        this.#logger.warn(
          `Not destroying sandbox ${id}: another instance owns it, or the ownership store cannot answer`,
        );
        return false;
      }
      let removed: Removed;
      [removed, reservation] = this.#removeTrackedReserved(id, reservation);
      if (removed?.client) await this.#closeClient(removed.client, id, 'destroy');
      const info = removed?.info;
      if (info !== undefined) {
        await this.#heldTeardown(id, () => this.backend.destroy(info));
      } else {
        // Nothing to stop: clear the marker just written.
        await this.#releaseOwnership(id);
      }
      return true;
    } finally {
      reservation.release();
    }
  }

  /**
   * Drops a sandbox whose container is gone or stopped. `expected` guards against a stale
   * verdict: when neither the active nor the warm entry is that very info object any more, the
   * entry was recreated after the check and is left alone.
   */
  async #dropUnhealthy(id: string, reason: string, expected?: SandboxInfo): Promise<void> {
    if (this.#pool.isReserved(id)) return;
    const removed = this.#removeTracked(id, expected);
    if (removed === undefined) return;
    // Same synchronous block as the check above, so nothing can have reserved it meanwhile; the
    // reservation keeps discovery and reconciliation off the container until its stop ended.
    const reservation = this.#pool.reserve(id);
    try {
      if (removed.client) await this.#closeClient(removed.client, id, 'drop');
      const info = removed.info;
      if (info !== undefined) {
        if (await this.#claim(id, true)) {
          try {
            await this.#heldTeardown(id, () => this.backend.destroy(info));
          } catch (err) {
            this.#logger.warn(`Could not stop unhealthy sandbox ${id}`, { error: errorText(err) });
          }
        } else {
          this.#logger.info(
            `Not stopping unhealthy sandbox ${id}: another instance owns it; reconciliation will see it again`,
          );
        }
      }
      this.#logger.warn(`Dropped unhealthy sandbox ${id}: ${reason}`);
    } finally {
      reservation?.release();
    }
  }

  /**
   * Untracks `id` everywhere (active maps, thread mappings, activity, epoch, warm entry); with
   * `expected`, only if the active or warm entry still holds that very info. Returns what was
   * removed, or undefined for a stale `expected`. Synchronous; refuses nothing itself, but the
   * warm pool keeps a reserved entry (see `#removeTrackedReserved`).
   */
  #removeTracked(id: string, expected?: SandboxInfo): Removed {
    const entry = this.#active.get(id);
    const warm = this.#pool.get(id);
    if (expected !== undefined && entry?.info !== expected && warm?.value.info !== expected) {
      return undefined;
    }
    if (entry !== undefined) {
      this.#active.delete(id);
      this.#dropThreadMappings(id);
      this.#lastActivity.delete(id);
    }
    this.#epoch.delete(id);
    if (warm !== undefined) this.#pool.forget(id);
    return { client: entry?.client, info: entry?.info ?? warm?.value.info };
  }

  /**
   * `#removeTracked` for an id this caller has reserved. The warm pool refuses to drop a reserved
   * entry (a teardown keeps its entry until the stop outcome is known); here the teardown is
   * ours, so the reservation is released, the entry removed and the id reserved again in one
   * synchronous block: no other task can observe the id unreserved.
   */
  #removeTrackedReserved(
    id: string,
    reservation: TeardownReservation,
  ): [Removed, TeardownReservation] {
    reservation.release();
    const removed = this.#removeTracked(id);
    const again = this.#pool.reserve(id);
    if (again === undefined) {
      throw new SandboxRuntimeError(`internal: could not re-reserve sandbox ${id} for teardown`);
    }
    return [removed, again];
  }

  #dropThreadMappings(id: string): void {
    for (const [key, mapped] of this.#threads) if (mapped === id) this.#threads.delete(key);
  }

  /**
   * Forgets a sandbox whose lease a peer now holds, without touching the container (stopping it
   * would be the very cross-instance kill the store exists to prevent). Refused while a teardown
   * of it runs here (a failed stop must keep its entry), while an acquire is publishing it (the
   * take may already be durable), or when an acquire re-published it since `expectedEpoch` was
   * read (the same client object is handed out again, so identity cannot tell).
   */
  #forgetLost(id: string, expectedEpoch?: number): boolean {
    if (this.#pool.isReserved(id) || this.#inflight.has(id)) return false;
    if (expectedEpoch !== undefined && (this.#epoch.get(id) ?? 0) !== expectedEpoch) return false;
    const entry = this.#active.get(id);
    if (entry !== undefined) {
      this.#active.delete(id);
      this.#dropThreadMappings(id);
      this.#lastActivity.delete(id);
    }
    if (this.#pool.has(id)) this.#pool.forget(id);
    this.#epoch.delete(id);
    this.#supersededHere.delete(id);
    if (entry !== undefined) void this.#closeClient(entry.client, id, 'forget');
    return true;
  }

  // --------------------------------------------------------------------------------------------
  // warm pool hooks and reapers

  /** Warm teardown: claim first (a refusal keeps the entry), stop under a held lease. */
  async #destroyWarm(entry: WarmEntry<WarmValue>, reason: WarmPoolDestroyReason): Promise<boolean> {
    if (this.#supersededHere.delete(entry.id)) {
      this.#logger.warn(
        `Forgetting warm sandbox ${entry.id} (${reason}): another instance took it over; the container keeps running`,
      );
      // The pool removes the entry inside its reservation; nothing is stopped.
      return true;
    }
    if (!(await this.#claim(entry.id, true))) {
      this.#logger.info(
        `Not stopping warm sandbox ${entry.id} (${reason}): another instance owns it`,
      );
      return false;
    }
    await this.#heldTeardown(entry.id, () => this.backend.destroy(entry.value.info));
    // The pool removes the entry now, inside its reservation.
    return true;
  }

  /** Stops active sandboxes idle past `idle_timeout` (warm expiry follows in the same pass). */
  async #cleanupIdleActive(): Promise<void> {
    const timeoutMs = this.settings.idleTimeoutSeconds * 1000;
    if (!(timeoutMs > 0) || this.#closed) return;
    const now = this.#clock.now();
    const idle = [...this.#lastActivity].filter(([, at]) => now - at > timeoutMs).map(([id]) => id);
    const manager = getSandboxLeaseManager(this, { logger: this.#logger });
    for (const id of idle) {
      let hold: IdleTeardownReservation | undefined;
      // Evaluated when the reservation is taken, not before: activity bumped since the snapshot,
      // or a lease holder, keeps the sandbox.
      const stillIdle = () => {
        const at = this.#lastActivity.get(id);
        if (at === undefined || this.#clock.now() - at < timeoutMs) return false;
        hold = manager.tryReserveIdleTeardown(id);
        return hold !== undefined;
      };
      try {
        await this.#destroyTracked(id, stillIdle);
      } catch (err) {
        this.#logger.error(`Failed to destroy idle sandbox ${id}`, { error: errorText(err) });
      } finally {
        hold?.release();
      }
    }
  }

  /** One idle-checker pass: idle active sandboxes, then expired warm ones. */
  async runIdleCheck(): Promise<void> {
    await this.#storePromise;
    await this.#pool.runIdleCheck();
  }

  /** Destroys the oldest warm sandbox this instance may destroy; its id, or undefined. */
  async evictOldestWarm(): Promise<string | undefined> {
    await this.#storePromise;
    return this.#pool.evictOldest();
  }

  /** Destroys warm sandboxes parked longer than `timeoutSeconds` (default `idle_timeout`). */
  async reapExpiredWarm(timeoutSeconds?: number): Promise<string[]> {
    await this.#storePromise;
    return this.#pool.reapExpired(timeoutSeconds);
  }

  // --------------------------------------------------------------------------------------------
  // ownership

  #requireStore(): OwnershipStore {
    if (this.#store === undefined) {
      throw new SandboxRuntimeError('internal: ownership store used before it was ready');
    }
    return this.#store;
  }

  #ownershipError(operation: string, sandboxId: string, error: unknown): void {
    this.#events.emit({ type: 'ownership-error', operation, sandboxId, error });
  }

  /**
   * Acquire-path ownership: take the lease (from anyone but a teardown). The intent mark is
   * visible before the round trip because the takeover is durable before `take()` returns; the
   * epoch covers "an acquire completed since you decided".
   */
  async #publish(id: string): Promise<void> {
    const store = this.#requireStore();
    this.#inflight.set(id, (this.#inflight.get(id) ?? 0) + 1);
    try {
      let taken: boolean;
      try {
        taken = await store.take(id);
      } catch (err) {
        this.#ownershipError('take', id, err);
        throw err;
      }
      if (!taken) throw new SandboxBeingDestroyedError(id);
      this.#epoch.set(id, ++this.#epochCounter);
    } finally {
      const left = (this.#inflight.get(id) ?? 1) - 1;
      if (left > 0) this.#inflight.set(id, left);
      else this.#inflight.delete(id);
    }
  }

  /** Adopt/reap gate, fail-closed: a store that cannot answer reads as "a peer owns it". */
  async #claim(id: string, forDestroy: boolean): Promise<boolean> {
    try {
      return await this.#requireStore().claim(id, { forDestroy });
    } catch (err) {
      this.#ownershipError('claim', id, err);
      this.#logger.warn(`Could not claim sandbox ${id}; treating it as another instance's`, {
        error: errorText(err),
      });
      return false;
    }
  }

  async #releaseOwnership(id: string): Promise<void> {
    try {
      await this.#requireStore().release(id);
    } catch (err) {
      this.#ownershipError('release', id, err);
      this.#logger.warn(`Could not release the lease of sandbox ${id}`, { error: errorText(err) });
    }
  }

  /**
   * Renewal, fail-open: only a definitive `LOST` (or a refused re-claim) is false. An absent
   * lease (`LAPSED`: a store restart, a flush) is re-claimed; a store that cannot answer in
   * either round trip means unknown, so the sandbox is kept and retried next tick.
   */
  async #refresh(id: string): Promise<boolean> {
    const store = this.#requireStore();
    let outcome: RenewOutcome;
    try {
      outcome = await store.renew(id);
    } catch (err) {
      this.#ownershipError('renew', id, err);
      this.#logger.warn(`Could not renew the lease of sandbox ${id}; keeping it`, {
        error: errorText(err),
      });
      return true;
    }
    if (outcome === RenewOutcome.RENEWED) return true;
    if (outcome === RenewOutcome.LOST) return false;
    try {
      const claimed = await store.claim(id);
      if (claimed) this.#logger.info(`Re-established the lapsed lease of sandbox ${id}`);
      return claimed;
    } catch (err) {
      this.#ownershipError('claim', id, err);
      this.#logger.warn(`Could not re-claim the lapsed lease of sandbox ${id}; keeping it`, {
        error: errorText(err),
      });
      return true;
    }
  }

  /** A peer holds the lease (own: or del:); false when it is ours, absent, or unknown. */
  async #heldByPeer(id: string): Promise<boolean> {
    const store = this.#requireStore();
    try {
      const holder = await store.owner(id);
      return holder !== undefined && holder.ownerId !== store.ownerId;
    } catch (err) {
      this.#ownershipError('owner', id, err);
      return false;
    }
  }

  #heldTeardown(id: string, stop: () => Promise<void>): Promise<void> {
    return withHeldTeardownLease(
      {
        store: this.#requireStore(),
        sandboxId: id,
        intervalMs: this.#renewalMs,
        clock: this.#clock,
        logger: this.#logger,
      },
      stop,
    );
  }

  /** Refreshes every lease this instance holds (active and warm). */
  async renewLeases(): Promise<void> {
    await this.#storePromise;
    this.#renewing ??= this.#renewPass().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  async #renewPass(): Promise<void> {
    const ids = [...new Set([...this.#active.keys(), ...this.#pool.ids()])];
    await Promise.all(
      ids.map(async (id) => {
        const epoch = this.#epoch.get(id) ?? 0;
        if (await this.#refresh(id)) return;
        if (!this.#forgetLost(id, epoch)) {
          // Kept only because a teardown here holds it: remember that it is a peer's now. Our
          // own teardown's del: marker reads as LOST too; that one is not a takeover.
          if (this.#pool.isReserved(id) && (await this.#heldByPeer(id))) {
            this.#supersededHere.add(id);
          }
          return;
        }
        this.#logger.warn(
          `Sandbox ${id} is owned by another instance now; forgot it (the container keeps running)`,
        );
      }),
    );
  }

  // --------------------------------------------------------------------------------------------
  // reconciliation

  /**
   * Adopts untracked running containers into the warm pool, where expiry and reclaim treat them
   * like any other. An untracked container must be seen unowned for a whole lease TTL first
   * (skipped on a store without cross-process visibility): after a store flush every live owner
   * republishes within one renewal interval, shorter than the TTL by construction, while a
   * crashed owner never does. A republished lease resets the wait. The atomic `claim` is still
   * what gates adoption.
   */
  async reconcile(): Promise<ReconcileSummary> {
    await this.#storePromise;
    this.#reconciling ??= this.#reconcilePass().finally(() => {
      this.#reconciling = undefined;
    });
    return this.#reconciling;
  }

  async #reconcilePass(): Promise<ReconcileSummary> {
    const summary: ReconcileSummary = {
      adopted: [],
      skipped: [],
      deferred: [],
      total: 0,
      budgetExhausted: false,
    };
    let listed: SandboxInfo[];
    try {
      listed = await this.backend.listRunning();
    } catch (err) {
      this.#logger.warn('Could not list running sandboxes for reconciliation', {
        error: errorText(err),
      });
      return summary;
    }
    const present = new Set(listed.map((info) => info.sandboxId));
    for (const id of [...this.#unownedSince.keys()]) {
      if (!present.has(id)) this.#unownedSince.delete(id);
    }
    summary.total = listed.length;
    const started = this.#clock.now();
    const budgetMs = this.settings.reconcile.maxSeconds * 1000;
    let looked = 0;
    for (const info of listed) {
      const id = info.sandboxId;
      if (this.#active.has(id) || this.#pool.has(id)) continue;
      if (
        looked >= this.settings.reconcile.maxItems ||
        this.#clock.now() - started > budgetMs ||
        this.#closed
      ) {
        summary.budgetExhausted = true;
        break;
      }
      looked += 1;
      if (!isValidSandboxId(id)) {
        summary.skipped.push(id);
        continue;
      }
      // A container being torn down here is untracked and still running: exactly what this loop
      // adopts, and neither our own claim nor the grace would exclude it.
      if (
        this.#pool.isReserved(id) ||
        this.#creating.has(id) ||
        !(await this.#adoptableAfterGrace(id))
      ) {
        summary.deferred.push(id);
        continue;
      }
      if (!(await this.#claim(id, false))) {
        summary.skipped.push(id);
        continue;
      }
      if (this.#active.has(id) || this.#pool.has(id)) continue;
      if (
        this.#pool.isReserved(id) ||
        this.#pool.put(id, { info, identity: undefined }) === undefined
      ) {
        summary.deferred.push(id);
        continue;
      }
      this.#unownedSince.delete(id);
      summary.adopted.push(id);
      this.#events.emit({ type: 'adopt', sandboxId: id });
    }
    if (summary.adopted.length > 0 || summary.deferred.length > 0 || summary.skipped.length > 0) {
      this.#logger.info('Reconciled sandbox containers', {
        adopted: summary.adopted.length,
        skipped: summary.skipped.length,
        deferred: summary.deferred.length,
        total: summary.total,
        budget_exhausted: summary.budgetExhausted,
      });
    }
    return summary;
  }

  async #adoptableAfterGrace(id: string): Promise<boolean> {
    return (await this.#graceVerdict(id, this.#leaseTtlMs)).kind === 'adoptable';
  }

  /**
   * The grace rule shared by reconciliation and `reapOrphans`: an untracked container is adoptable
   * once seen unowned for `graceMs`; any holder resets the wait, and a store that cannot answer
   * is never adoptable.
   */
  async #graceVerdict(id: string, graceMs: number): Promise<GraceVerdict> {
    const store = this.#requireStore();
    // No peer can hold a lease such a store would show us: instant orphan cleanup.
    if (!store.supportsCrossProcess) return { kind: 'adoptable' };
    let holder: LeaseHolder | undefined;
    try {
      holder = await store.owner(id);
    } catch (err) {
      this.#ownershipError('owner', id, err);
      return { kind: 'unknown', error: errorText(err) };
    }
    if (holder !== undefined) {
      this.#unownedSince.delete(id);
      return { kind: 'owned', holder };
    }
    const now = this.#clock.now();
    const first = this.#unownedSince.get(id);
    if (first === undefined) {
      this.#unownedSince.set(id, now);
      return { kind: 'waiting' };
    }
    return now - first >= graceMs ? { kind: 'adoptable' } : { kind: 'waiting' };
  }

  // --------------------------------------------------------------------------------------------
  // CLI capabilities (`sbx ls`, `sbx gc`)

  /**
   * Every container the backend lists, with this instance's view (`active` / `warm`) or, for an
   * untracked one, the ownership store's read-only peek. Claims and stops nothing.
   */
  async listSandboxes(options: AioListSandboxesOptions = {}): Promise<AioSandboxSummary[]> {
    // After the start-up reconciliation, so a container it is adopting is not caught half-way.
    await this.ready();
    throwIfAborted(options.signal);
    const listed = await this.backend.listRunning(
      options.signal ? { signal: options.signal } : undefined,
    );
    const out: AioSandboxSummary[] = [];
    for (const info of listed) {
      throwIfAborted(options.signal);
      const id = info.sandboxId;
      const location = info.containerName || info.sandboxUrl || undefined;
      const labelled = info.labels ? { labels: info.labels } : {};
      const active = this.#active.get(id);
      if (active !== undefined) {
        const at = this.#lastActivity.get(id);
        out.push({
          id,
          ...identityFields(active.identity),
          state: 'active',
          ...(at !== undefined ? { updatedAt: new Date(at).toISOString() } : {}),
          location,
          ...labelled,
        });
        continue;
      }
      const warm = this.#pool.get(id);
      if (warm !== undefined) {
        out.push({
          id,
          ...identityFields(warm.value.identity),
          state: 'warm',
          updatedAt: new Date(warm.releasedAt).toISOString(),
          location,
          ...labelled,
        });
        continue;
      }
      out.push({ id, state: await this.#ownerState(id), location, ...labelled });
    }
    return out;
  }

  async #ownerState(id: string): Promise<string> {
    try {
      const holder = await this.#requireStore().owner(id);
      if (holder === undefined) return 'unowned';
      return holder.state === 'del'
        ? `being destroyed by ${holder.ownerId}`
        : `owned by ${holder.ownerId}`;
    } catch (err) {
      this.#ownershipError('owner', id, err);
      this.#logger.warn(`Could not read the owner of sandbox ${id}`, { error: errorText(err) });
      return 'owner unknown';
    }
  }

  /**
   * Stops untracked containers under reconciliation's rules: seen unowned for the whole grace
   * (observed, then observed again `graceMs` later on the provider's clock, unless the store has
   * no cross-process visibility or an earlier reconciliation already started the wait), then
   * claimed for destroy and stopped under a held teardown lease. A process that just started has
   * no earlier sightings, so without the second look a lease lost to a store flush would read as
   * an orphan while its live owner is about to republish it.
   */
  async reapOrphans(options: AioReapOrphansOptions = {}): Promise<AioOrphanReapReport> {
    await this.ready();
    const { signal } = options;
    const dryRun = options.dryRun === true;
    const graceMs = options.graceMs ?? this.#leaseTtlMs;
    if (!(graceMs >= 0) || !Number.isFinite(graceMs)) {
      throw new InvalidArgumentError(`graceMs must be a finite number >= 0, got ${graceMs}`);
    }
    throwIfAborted(signal);
    const listed = await this.backend.listRunning(signal ? { signal } : undefined);
    const kept: { id: string; reason: string }[] = [];
    const reaped: string[] = [];
    const keep = (id: string, reason: string) => kept.push({ id, reason });

    let candidates = await this.#orphanPass(listed, graceMs, keep, signal);
    if (candidates.waiting.length > 0) {
      await this.#sleep(graceMs, signal);
      // Listed again: a container stopped meanwhile is nobody's to reap, and one that appeared
      // meanwhile has had no first look.
      const waiting = new Set(candidates.waiting.map((info) => info.sandboxId));
      const relisted = await this.backend.listRunning(signal ? { signal } : undefined);
      const stillThere = relisted.filter((info) => waiting.has(info.sandboxId));
      const again = await this.#orphanPass(stillThere, graceMs, keep, signal);
      for (const info of again.waiting) keep(info.sandboxId, 'unowned, still inside its grace');
      candidates = { adoptable: [...candidates.adoptable, ...again.adoptable], waiting: [] };
    }
    for (const info of candidates.adoptable) {
      throwIfAborted(signal);
      const id = info.sandboxId;
      if (dryRun) {
        reaped.push(id);
        continue;
      }
      const outcome = await this.#destroyUntracked(id, info);
      if (outcome === 'stopped') {
        reaped.push(id);
        this.#unownedSince.delete(id);
      } else keep(id, UNTRACKED_STOP_REASONS[outcome]);
    }
    if (reaped.length > 0) {
      this.#logger.info(
        dryRun ? 'Orphan sandboxes that would be reaped' : 'Reaped orphan sandboxes',
        {
          reaped,
        },
      );
    }
    return { reaped, kept };
  }

  /** One look at each container; those kept for good are reported through `keep`. */
  async #orphanPass(
    listed: readonly SandboxInfo[],
    graceMs: number,
    keep: (id: string, reason: string) => void,
    signal: AbortSignal | undefined,
  ): Promise<{ adoptable: SandboxInfo[]; waiting: SandboxInfo[] }> {
    const adoptable: SandboxInfo[] = [];
    const waiting: SandboxInfo[] = [];
    for (const info of listed) {
      throwIfAborted(signal);
      const id = info.sandboxId;
      if (this.#active.has(id)) keep(id, 'active in this instance');
      else if (this.#creating.has(id)) keep(id, 'being created by this instance');
      else if (this.#pool.has(id)) keep(id, 'warm in this instance');
      else if (this.#pool.isReserved(id)) keep(id, 'being torn down by this instance');
      else if (!isValidSandboxId(id)) keep(id, 'not a valid sandbox id');
      else {
        const verdict = await this.#graceVerdict(id, graceMs);
        if (verdict.kind === 'adoptable') adoptable.push(info);
        else if (verdict.kind === 'waiting') waiting.push(info);
        else if (verdict.kind === 'unknown') {
          keep(id, `owner unknown: the ownership store cannot answer (${verdict.error})`);
        } else if (verdict.holder.state === 'del') {
          keep(id, `being destroyed by ${verdict.holder.ownerId}`);
        } else keep(id, `owned by ${verdict.holder.ownerId}`);
      }
    }
    return { adoptable, waiting };
  }

  /** Ref'd (core's `sleep`): in a one-shot CLI process this wait is the only thing keeping it alive. */
  #sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return sleep(ms, { clock: this.#clock, signal });
  }

  // --------------------------------------------------------------------------------------------
  // lifecycle

  #startBackground(): void {
    if (this.#backgroundStarted) return;
    this.#backgroundStarted = true;
    // Renewal always runs: liveness must not depend on whether idle reaping is enabled.
    this.#scheduleRenewal();
    this.#scheduleReconcile();
    if (this.settings.idleTimeoutSeconds > 0) this.#pool.start();
    this.#startupReconcile = this.reconcile().catch((err: unknown) => {
      this.#logger.error('Start-up reconciliation failed', { error: errorText(err) });
    });
  }

  /** Whether the lease-renewal timer is scheduled (diagnostics). */
  get renewalRunning(): boolean {
    return this.#renewTimer !== undefined;
  }

  /** Whether the warm-pool idle checker runs (only with `idle_timeout > 0`). */
  get idleCheckerRunning(): boolean {
    return this.#pool.idleCheckerRunning;
  }

  #scheduleRenewal(): void {
    if (this.#closed || this.#detached) return;
    this.#renewTimer = this.#clock.setTimeout(async () => {
      this.#renewTimer = undefined;
      if (this.#closed || this.#detached) return;
      try {
        await this.renewLeases();
      } catch (err) {
        this.#logger.error('Lease renewal pass failed', { error: errorText(err) });
      }
      this.#scheduleRenewal();
    }, this.#renewalMs);
  }

  #scheduleReconcile(): void {
    if (this.#closed || this.#detached) return;
    this.#reconcileTimer = this.#clock.setTimeout(async () => {
      this.#reconcileTimer = undefined;
      if (this.#closed || this.#detached) return;
      try {
        await this.reconcile();
      } catch (err) {
        this.#logger.error('Reconciliation pass failed', { error: errorText(err) });
      }
      this.#scheduleReconcile();
    }, this.settings.reconcile.intervalSeconds * 1000);
  }

  /**
   * Detaches this instance: closes the acquire serializer (and the lease manager bound to this
   * provider), so a replaced default provider keeps nothing waiting, and stops every piece of
   * background work (lease renewal, reconciliation, the idle checker). No container is touched:
   * this instance's leases are no longer renewed and lapse, so a replacement adopts what it left
   * running. Stopping the timers is the point: a detached instance that kept expiring its warm
   * entries would stop containers the replacement has since handed out. Full teardown is
   * `shutdown()`. The instance must not be used for acquires again.
   */
  override async reset(): Promise<void> {
    this.#detached = true;
    this.#clearTimers();
    this.#serializer.close();
    discardSandboxLeaseManager(this);
    await this.#pool.stop();
  }

  #clearTimers(): void {
    for (const timer of [this.#renewTimer, this.#reconcileTimer]) {
      if (timer !== undefined) this.#clock.clearTimeout(timer);
    }
    this.#renewTimer = undefined;
    this.#reconcileTimer = undefined;
  }

  /**
   * Full teardown, idempotent: stops renewal, reconciliation and the idle checker, waits for
   * acquires in flight, then stops every sandbox whose lease this instance can claim (active,
   * then warm). Peer-owned ones are only forgotten and their clients closed. Closes the store if
   * it built it.
   */
  override async shutdown(): Promise<void> {
    this.#shutdown ??= this.#shutdownNow();
    return this.#shutdown;
  }

  async #shutdownNow(): Promise<void> {
    this.#closed = true;
    this.#clearTimers();
    this.#serializer.close();
    discardSandboxLeaseManager(this);
    await this.#pool.stop();
    await Promise.allSettled([...this.#acquires]);
    await Promise.allSettled([this.#renewing, this.#reconciling, this.#startupReconcile]);
    let store: OwnershipStore | undefined;
    try {
      store = await this.#storePromise;
    } catch {
      store = undefined; // already logged at start-up; nothing can be claimed, so nothing is stopped
    }
    if (store !== undefined) {
      await Promise.all(
        [...this.#active.keys()].map(async (id) => {
          try {
            await this.#destroyTracked(id, () => true);
          } catch (err) {
            this.#logger.error(
              `Failed to destroy sandbox ${id} during shutdown: ${errorText(err)}`,
            );
          }
        }),
      );
      await this.#pool.destroyAll();
    }
    for (const [id, entry] of [...this.#active]) {
      this.#active.delete(id);
      await this.#closeClient(entry.client, id, 'shutdown');
    }
    for (const id of this.#pool.ids()) this.#pool.forget(id);
    this.#threads.clear();
    this.#lastActivity.clear();
    this.#unownedSince.clear();
    if (store !== undefined && this.#ownsStore) {
      try {
        await store.close();
      } catch (err) {
        this.#logger.warn('Could not close the ownership store', { error: errorText(err) });
      }
    }
    const closable = this.backend as Partial<{ close(): Promise<void> }>;
    if (this.#ownsBackend && typeof closable.close === 'function') {
      try {
        await closable.close.call(this.backend);
      } catch (err) {
        this.#logger.warn('Could not close the sandbox backend', { error: errorText(err) });
      }
    }
  }

  // --------------------------------------------------------------------------------------------
  // helpers

  #buildBackend(): SandboxBackend {
    const s = this.settings;
    // Readiness is the provider's: an unready container must be stopped under the ownership
    // rules (another instance may have discovered it meanwhile), not by the backend directly.
    if (s.provisionerUrl) {
      return new RemoteSandboxBackend({
        provisionerUrl: s.provisionerUrl,
        ...(s.provisionerApiKey ? { apiKey: s.provisionerApiKey } : {}),
        skillsRoot: s.skillsRoot,
        readyTimeoutMs: 0,
        logger: this.#logger,
      });
    }
    return new LocalContainerBackend({
      image: s.image,
      basePort: s.basePort,
      containerPrefix: s.containerPrefix,
      mounts: s.mounts,
      // The image enforces the key sbx sends (SANDBOX_API_KEY, agent-infra/sandbox).
      environment: s.apiKey ? { ...s.environment, SANDBOX_API_KEY: s.apiKey } : s.environment,
      ...(s.apiKey ? { apiKey: s.apiKey } : {}),
      headers: s.headers,
      resources: s.resources,
      security: s.security,
      network: s.network,
      ...(s.sandboxHost ? { sandboxHost: s.sandboxHost } : {}),
      ...(s.bindHost ? { bindHost: s.bindHost } : {}),
      skillsRoot: s.skillsRoot,
      readyTimeoutMs: 0,
      ...(s.stopTimeoutMs !== undefined ? { stopTimeoutMs: s.stopTimeoutMs } : {}),
      ...(s.stopGraceSeconds !== undefined ? { stopGraceSeconds: s.stopGraceSeconds } : {}),
      logger: this.#logger,
    });
  }

  #defaultReadiness(info: SandboxInfo): Promise<boolean> {
    return waitForSandboxReady(info.sandboxUrl, {
      timeoutMs: this.settings.readyTimeoutMs,
      headers: aioRequestHeaders(this.settings),
      // A local container that exited need not cost the whole budget. (A provisioner reports
      // a starting Pod as not Running, so the check would end its wait too early.)
      ...(this.backend.kind === 'local'
        ? { stillViable: async () => (await this.#checkHealth(info)) !== 'dead' }
        : {}),
    });
  }

  /** Unknown is not dead: a failed check keeps the sandbox (the next check corrects it). */
  async #checkHealth(info: SandboxInfo): Promise<SandboxHealth> {
    try {
      return await this.backend.checkHealth(info);
    } catch (err) {
      this.#logger.warn(`Could not check the health of sandbox ${info.sandboxId}; keeping it`, {
        error: errorText(err),
      });
      return 'unknown';
    }
  }

  async #closeClient(client: Sandbox, id: string, during: string): Promise<void> {
    try {
      await client.close();
    } catch (err) {
      this.#logger.warn(`Error closing sandbox ${id} during ${during}: ${errorText(err)}`);
    }
  }
}

/** Factory form for the provider loader (`use: "@sbx/aio"` loads the class itself). */
export function createAioProvider(init: AioSandboxProviderInit): AioSandboxProvider {
  return new AioSandboxProvider(init);
}
