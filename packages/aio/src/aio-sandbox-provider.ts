import {
  InvalidArgumentError,
  ProviderClosedError,
  SandboxProvider,
  SerializerClosedError,
  assertSafePathSegment,
  discardSandboxLeaseManager,
  errorMessage,
  resolveEffectiveUserId,
  resolveOwnershipConfig,
  silentLogger,
  systemClock,
} from '@sbx/core';
import type {
  AcquireOptions,
  Clock,
  Logger,
  ResolvedOwnershipConfig,
  Sandbox,
  SandboxCounts,
  SandboxProviderCounts,
  SandboxProviderEventListener,
  SandboxProviderEvents,
  SandboxLifecycleSupport,
  SandboxSpec,
  SnapshotArchiveStore,
  SnapshotRef,
  SandboxSpecPolicy,
  SandboxSpecSupport,
  NetworkPolicySupport,
  SkillsView,
} from '@sbx/core';
import {
  DEFAULT_SPEC_POLICY,
  checkSandboxSpec,
  leaseTtlMilliseconds,
  specPolicyWithin,
} from '@sbx/core/internal';
import {
  AcquireSerializer,
  OwnershipLink,
  PeriodicTask,
  SandboxBook,
  SandboxProviderEventEmitter,
  SingleFlight,
  serializerKey,
} from '@sbx/core/provider-kit';
import { AioAcquirePaths } from './aio-acquire-paths.js';
import { aioClientFactory, closeQuietly } from './aio-backend-hooks.js';
import { AioLeaseRenewal } from './aio-lease-renewal.js';
import { AioPauses } from './aio-pauses.js';
import { AioSnapshots } from './aio-snapshots.js';
import { openOwnershipStore } from './aio-ownership-store.js';
import type {
  AioListSandboxesOptions,
  AioOrphanReapReport,
  AioProviderSnapshot,
  AioSandboxProviderInit,
  AioSandboxSummary,
} from './aio-provider-init.js';
import { aioSandboxId, aioSkillsViewOf } from './aio-identity.js';
import type { AioBook, AioSandboxIdOptions, AioThreadIdentity } from './aio-identity.js';
import { createAioContext } from './aio-provider-context.js';
import { createAioWarmPool } from './aio-warm-pool.js';
import { resolveAioSettings } from './aio-provider-config.js';
import type { AioSettings } from './aio-provider-config.js';
import { AioReconciler } from './aio-reconciler.js';
import type { AioReapOrphansOptions, ReconcileSummary } from './aio-reconciler.js';
import { AioTeardown } from './aio-teardown.js';
import { containerSpecSupport } from './container-spec.js';
import { buildSandboxBackend } from './sandbox-backend-factory.js';
import type { SandboxBackend } from './sandbox-backend.js';

export type { AioReapOrphansOptions, ReconcileSummary } from './aio-reconciler.js';
export type {
  AioListSandboxesOptions,
  AioOrphanReapReport,
  AioProviderSnapshot,
  AioSandboxProviderInit,
  AioSandboxSummary,
} from './aio-provider-init.js';

/**
 * Sandboxes in all-in-one sandbox containers (local Docker/Podman, or Pods behind a provisioner):
 * one per (user, thread), parked warm between turns, coordinated across gateway instances by an
 * ownership lease store. See the package README for configuration and failure semantics.
 *
 * The class wires the provider kit to the AIO backend and keeps the public API; the lifecycle
 * lives in its collaborators, each given the same context and book:
 * - `AioAcquirePaths`: reuse, reclaim, discover, create;
 * - `AioTeardown`: every stop and forget, the warm and idle reapers;
 * - `AioLeaseRenewal`: renewal, with the precedence of a lease a flush erased;
 * - `AioReconciler`: adoption of untracked containers, `sbx ls` and `sbx gc`.
 *
 * One concept, kept whole: what remains here is that wiring and the public API delegating to it;
 * splitting the delegations would only scatter one class's surface.
 *
 * Concurrency model. Node runs one event loop, so a synchronous stretch of code (no `await`) is
 * this provider's critical section. Every store call, backend call and readiness poll is an await
 * point where another acquire or a reaper can interleave; every guard exists for one of those
 * points, and every check taken before one is taken again after it. Reapers decide outside any
 * lock, so each relies on the teardown reservation, the acquire epoch and the intent mark of the
 * ownership client, and the `del:` lease state held by a heartbeat for the whole of every stop.
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
  readonly #specPolicy: SandboxSpecPolicy;
  readonly #link: OwnershipLink;
  readonly #ownsBackend: boolean;
  readonly #leaseTtlMs: number;
  readonly #book: AioBook;
  readonly #teardown: AioTeardown;
  readonly #paths: AioAcquirePaths;
  readonly #pauses: AioPauses;
  readonly #snapshots: AioSnapshots;
  readonly #reconciler: AioReconciler;
  readonly #leases: AioLeaseRenewal;
  readonly #renewal: PeriodicTask;
  readonly #reconciliation: PeriodicTask;
  readonly #acquires = new Set<Promise<unknown>>();

  #closed = false;
  /** Set by `reset()`: the instance handed everything over and takes no acquire again. */
  #retired = false;
  #retiring: Promise<void> | undefined;
  #shutdown: Promise<void> | undefined;
  #startupReconcile: Promise<unknown> | undefined;
  readonly #renewing = new SingleFlight<void>();
  readonly #reconciling = new SingleFlight<ReconcileSummary>();
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
    // Without sandbox.spec.max_*, a spec may only narrow the configured container limits.
    this.#specPolicy = specPolicyWithin(
      init.config.specPolicy ?? DEFAULT_SPEC_POLICY,
      this.settings.resources,
    );
    this.ownership = resolveOwnershipConfig(init.config, env, {
      ...(init.streamBridge ? { streamBridge: init.streamBridge } : {}),
    });
    this.#leaseTtlMs = leaseTtlMilliseconds(this.ownership.leaseTtlSeconds);
    const renewalMs = Math.max(1, Math.round(this.ownership.renewalIntervalSeconds * 1000));
    this.#ownsBackend = init.backend === undefined;
    this.backend = init.backend ?? buildSandboxBackend(this.settings, this.#logger);
    this.#events = new SandboxProviderEventEmitter({ logger: this.#logger });
    this.#serializer = new AcquireSerializer({ name: 'aio-sandbox-acquire', logger: this.#logger });
    const createClient = init.createClient ?? aioClientFactory(this.settings, this.#logger);
    const pool = createAioWarmPool(this.settings, this.#clock, this.#logger, {
      destroy: (entry, reason) => this.#teardown.destroyWarm(entry, reason),
      isActive: (id) => this.#book.isActive(id),
      onIdleCheck: () => this.#teardown.cleanupIdleActive(),
    });
    this.#book = new SandboxBook({ pool, clock: this.#clock });
    const ctx = createAioContext({
      settings: this.settings,
      backend: this.backend,
      logger: this.#logger,
      clock: this.#clock,
      events: this.#events,
      book: this.#book,
      leaseTtlMs: this.#leaseTtlMs,
      renewalIntervalMs: renewalMs,
      link: () => this.#link,
      isClosed: () => this.#closed,
      createClient,
      readinessProbe: init.readinessProbe,
      leaseOwner: this,
    });
    this.#teardown = new AioTeardown(ctx);
    const hold = <T>(key: string, work: () => Promise<T>) => this.#serializer.hold(key, work);
    this.#pauses = new AioPauses(ctx, hold);
    this.#snapshots = new AioSnapshots(
      ctx,
      hold,
      () => this.usesThreadDataMounts,
      init.config.checkpoint,
    );
    this.#paths = new AioAcquirePaths(
      ctx,
      this.#teardown,
      (identity) => this.sandboxIdFor(identity),
      this.#pauses,
      this.#specPolicy.network,
    );
    this.#reconciler = new AioReconciler(ctx, this.#teardown);
    this.#leases = new AioLeaseRenewal(ctx, this.#teardown);
    const task = (name: string, intervalMs: number, run: () => Promise<unknown>) =>
      new PeriodicTask({ name, intervalMs, run, clock: this.#clock, logger: this.#logger });
    this.#renewal = task('Lease renewal', renewalMs, () => this.renewLeases());
    this.#reconciliation = task(
      'Reconciliation',
      this.settings.reconcile.intervalSeconds * 1000,
      () => this.reconcile(),
    );

    this.#link = new OwnershipLink({
      store: openOwnershipStore(init, this.ownership, env),
      ownsStore: init.ownershipStore === undefined,
      renewalIntervalMs: renewalMs,
      emit: (event) => this.#events.emit(event),
      clock: this.#clock,
      logger: this.#logger,
      name: 'AioSandboxProvider',
    });
    if (init.background ?? true) {
      void this.#link.settled().then(() => {
        if (this.#link.clientIfReady !== undefined && !this.#closed) this.#startBackground();
      });
    }
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
    return { active: this.#book.activeCount, warm: this.#book.pool.size };
  }

  /** Resolves once the ownership store is up and the start-up reconciliation has run. */
  async ready(): Promise<void> {
    await this.#link.ready();
    await this.#startupReconcile;
  }

  /** The owner id this instance writes into leases. */
  async ownerId(): Promise<string> {
    return (await this.#link.ready()).ownerId;
  }

  /** Lease TTL in milliseconds (renewal interval × multiplier): also the adoption grace. */
  get leaseTtlMs(): number {
    return this.#leaseTtlMs;
  }

  /** What this instance tracks now (active, warm, threads), for tests and diagnostics. */
  stateSnapshot(): AioProviderSnapshot {
    return {
      active: this.#book.activeIds(),
      warm: this.#book.pool.ids(),
      threads: this.#book.threadMap(),
    };
  }

  /** Whether a teardown of `sandboxId` is in flight in this process. */
  isTearingDown(sandboxId: string): boolean {
    return this.#book.isTearingDown(sandboxId);
  }

  // --------------------------------------------------------------------------------------------
  // acquire, get, release, destroy

  override async acquire(options: AcquireOptions = {}): Promise<string> {
    await this.#learnNetworkSupport();
    this.admit(options);
    if (this.#closed || this.#retired) throw new ProviderClosedError();
    if (this.#serializer.closed) throw new SerializerClosedError();
    if (options.threadId === undefined || options.threadId === null) {
      return this.#track(this.#afterStartup(() => this.#paths.acquireAnonymous()));
    }
    const userId = assertSafePathSegment('userId', resolveEffectiveUserId(options.userId));
    const threadId = assertSafePathSegment('threadId', options.threadId);
    const spec = checkSandboxSpec(
      options.spec,
      this.specSupport,
      this.specPolicy,
      'AioSandboxProvider',
    );
    const identity: AioThreadIdentity = {
      userId,
      threadId,
      explicitSkillPolicy: options.skillPolicy !== undefined,
      ...(spec ? { spec } : {}),
    };
    const { fromSnapshot } = options;
    return this.#track(
      this.#serializer.hold(
        serializerKey(userId, threadId),
        () =>
          this.#afterStartup(async () => {
            // Under the thread's lock, before any path: the container starts with the files.
            if (fromSnapshot !== undefined && fromSnapshot !== null) {
              await this.#snapshots.restoreBeforeAcquire(fromSnapshot, identity);
            }
            return this.#paths.acquireThread(identity);
          }),
        { signal: options.signal },
      ),
    );
  }

  /** Runs `work` once the store is up (its failure is thrown) and the ownership client built. */
  async #afterStartup<T>(work: () => Promise<T>): Promise<T> {
    await this.#link.ready();
    return work();
  }

  /**
   * See `containerSpecSupport`: local containers honour a spec, a provisioner only the network
   * policies it says it enforces (known after the first acquire asked it; before that, none).
   */
  override get specSupport(): SandboxSpecSupport {
    return containerSpecSupport(this.backend.kind, this.#networkSupport);
  }

  #networkSupport: NetworkPolicySupport | undefined;
  #networkProbe: Promise<void> | undefined;

  /**
   * Asks the backend once which network policies it enforces, before the first admit: the answer
   * decides whether a restricting policy is refused. A failed ask is not remembered (the next
   * acquire asks again) and fails this acquire: never guessed, in either direction.
   */
  async #learnNetworkSupport(): Promise<void> {
    const ask = this.backend.networkSupport;
    if (ask === undefined || this.#networkSupport !== undefined) return;
    this.#networkProbe ??= ask
      .call(this.backend)
      .then((support) => {
        this.#networkSupport = support;
      })
      .finally(() => {
        this.#networkProbe = undefined;
      });
    await this.#networkProbe;
  }

  protected override get specPolicy(): SandboxSpecPolicy {
    return this.#specPolicy;
  }

  /** The deterministic id of a thread's sandbox (policy-, skills-root- and spec-scoped). */
  sandboxIdFor(options: AioSandboxIdOptions): string {
    return aioSandboxId(this.settings.skillsRoot, options);
  }

  /** A policy-scoped run's id is its own (see `aioSkillsViewOf`). */
  override skillsViewOf(
    sandboxId: string,
    identity: { userId?: string; threadId: string; spec?: SandboxSpec },
  ): SkillsView | undefined {
    return aioSkillsViewOf(this.settings.skillsRoot, sandboxId, identity);
  }

  #track<T>(work: Promise<T>): Promise<T> {
    this.#acquires.add(work);
    const done = () => this.#acquires.delete(work);
    work.then(done, done);
    return work;
  }

  /**
   * A pure in-memory lookup: no store, backend or other I/O (it runs on every tool call). A
   * sandbox this instance paused is not handed out (its calls would hang): the caller acquires it
   * again, which resumes it.
   */
  override get(sandboxId: string): Sandbox | undefined {
    if (this.#pauses.isPaused(sandboxId)) return undefined;
    const entry = this.#book.active(sandboxId);
    if (entry === undefined) return undefined;
    this.#book.touch(sandboxId);
    return entry.client;
  }

  /**
   * End of turn: parks the sandbox warm (the container keeps running) and closes its client, then
   * refreshes the lease. Never throws for store problems; a lease lost to a peer forgets the
   * sandbox here without stopping it.
   */
  override async release(sandboxId: string): Promise<void> {
    await this.#paths.release(sandboxId);
  }

  /**
   * Stops a tracked sandbox under a held teardown lease. Refused (nothing stopped, the entry stays
   * tracked) when another instance holds its lease or the store cannot answer. A failed stop
   * propagates after the marker is released.
   */
  async destroy(sandboxId: string): Promise<void> {
    await this.#link.ready();
    await this.#teardown.destroyTracked(sandboxId, () => true);
  }

  // --------------------------------------------------------------------------------------------
  // pause and resume (see `AioPauses`)

  /**
   * Pause on a local container backend (a provisioner's Pods cannot); snapshot where the thread
   * data is on this host (`usesThreadDataMounts`). Otherwise refused, typed.
   */
  override get lifecycleSupport(): SandboxLifecycleSupport {
    return { pause: this.#pauses.supported, snapshot: this.#snapshots.supported };
  }

  /** A workspace checkpoint of the thread of a sandbox this instance holds (see `AioSnapshots`). */
  override async snapshot(sandboxId: string): Promise<SnapshotRef> {
    await this.#link.ready();
    if (this.#closed || this.#retired) throw new ProviderClosedError();
    return this.#snapshots.snapshot(sandboxId);
  }

  /** The store of this provider's snapshots (`sweep()` removes expired ones). */
  get snapshotStore(): SnapshotArchiveStore {
    return this.#snapshots.store;
  }

  /**
   * `docker pause` of a sandbox this instance holds (active or warm), its ownership kept.
   * `SandboxBusyError` while a turn holds an execution lease on it; `SandboxNotFoundError` for one
   * this instance does not hold.
   */
  override async pause(sandboxId: string): Promise<void> {
    await this.#link.ready();
    if (this.#closed || this.#retired) throw new ProviderClosedError();
    await this.#pauses.pause(sandboxId);
  }

  /** Unpauses a sandbox this instance holds; one not paused is fine. */
  override async resume(sandboxId: string): Promise<void> {
    await this.#link.ready();
    if (this.#closed || this.#retired) throw new ProviderClosedError();
    await this.#pauses.resume(sandboxId);
  }

  // --------------------------------------------------------------------------------------------
  // reapers, renewal, reconciliation (each also runs on its timer)

  /** One idle-checker pass: idle active sandboxes, then expired warm ones. */
  async runIdleCheck(): Promise<void> {
    await this.#link.ready();
    await this.#book.pool.runIdleCheck();
  }

  /** Destroys the oldest warm sandbox this instance may destroy; its id, or undefined. */
  async evictOldestWarm(): Promise<string | undefined> {
    await this.#link.ready();
    return this.#book.pool.evictOldest();
  }

  /** Destroys warm sandboxes parked longer than `timeoutSeconds` (default `idle_timeout`). */
  async reapExpiredWarm(timeoutSeconds?: number): Promise<string[]> {
    await this.#link.ready();
    return this.#book.pool.reapExpired(timeoutSeconds);
  }

  /** Refreshes every lease this instance holds (active and warm); one pass at a time. */
  async renewLeases(): Promise<void> {
    await this.#link.ready();
    return this.#renewing.run(() => this.#leases.renewPass());
  }

  /** One reconciliation pass (shared if one is running); see `AioReconciler`. */
  async reconcile(): Promise<ReconcileSummary> {
    await this.#link.ready();
    return this.#reconciling.run(() => this.#reconciler.reconcilePass());
  }

  /** `sbx ls`: every container the backend lists, with this instance's or the store's view. */
  async listSandboxes(options: AioListSandboxesOptions = {}): Promise<AioSandboxSummary[]> {
    // After the start-up reconciliation, so a container it is adopting is not caught half-way.
    await this.ready();
    return this.#reconciler.listSandboxes(options);
  }

  /** `sbx gc`: stops untracked containers under reconciliation's grace (see `AioReconciler`). */
  async reapOrphans(options: AioReapOrphansOptions = {}): Promise<AioOrphanReapReport> {
    await this.ready();
    return this.#reconciler.reapOrphans(options);
  }

  // --------------------------------------------------------------------------------------------
  // lifecycle

  #startBackground(): void {
    if (this.#backgroundStarted) return;
    this.#backgroundStarted = true;
    // Renewal always runs: liveness must not depend on whether idle reaping is enabled.
    this.#renewal.start();
    this.#reconciliation.start();
    if (this.settings.idleTimeoutSeconds > 0) this.#book.pool.start();
    this.#startupReconcile = this.reconcile().catch((err: unknown) => {
      this.#logger.error('Start-up reconciliation failed', { error: errorMessage(err) });
    });
  }

  /** Whether lease renewal is scheduled (diagnostics). */
  get renewalRunning(): boolean {
    return this.#renewal.running;
  }

  /** Whether the warm-pool idle checker runs (only with `idle_timeout > 0`). */
  get idleCheckerRunning(): boolean {
    return this.#book.pool.idleCheckerRunning;
  }

  /**
   * The reset contract (docs/architecture.md): stops background work (renewal, reconciliation,
   * the idle checker), releases what this instance holds and refuses further use
   * (`ProviderClosedError`). No container is stopped: a replacement finds each one again by its
   * name, so clients are closed and leases given up (a replacement on the same store takes them
   * at once rather than one TTL later). Stopping the timers is the point: a retired instance that
   * kept expiring its warm entries would stop containers the replacement has since handed out.
   * Acquires and passes in flight are waited for first: what one installed after the hand-over
   * would keep a lease nothing renews. Idempotent; a `shutdown()` after it stops nothing.
   */
  override async reset(): Promise<void> {
    this.#retiring ??= this.#retire();
    return this.#retiring;
  }

  async #retire(): Promise<void> {
    this.#retired = true;
    this.#stopBackground();
    this.#serializer.close();
    discardSandboxLeaseManager(this);
    await this.#book.pool.stop();
    await this.#inFlightSettled();
    await this.#teardown.handOverAll();
  }

  /** Acquires, renewal and reconciliation passes in flight have ended (whatever their outcome). */
  #inFlightSettled(): Promise<unknown> {
    const passes = [this.#renewing.current, this.#reconciling.current, this.#startupReconcile];
    return Promise.allSettled([...this.#acquires, ...passes]);
  }

  /** Stops the schedules at once; a pass in flight is awaited by the caller. */
  #stopBackground(): void {
    void this.#renewal.stop();
    void this.#reconciliation.stop();
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
    this.#stopBackground();
    this.#serializer.close();
    discardSandboxLeaseManager(this);
    await this.#book.pool.stop();
    await this.#inFlightSettled();
    // A store that failed to open was logged then; nothing can be claimed, so nothing is stopped.
    if ((await this.#link.storeIfOpen()) !== undefined) await this.#teardown.stopAll();
    await this.#teardown.forgetAll();
    this.#reconciler.clear();
    await this.#link.close(this.#logger);
    const close = (this.backend as Partial<{ close(): Promise<void> }>).close;
    if (this.#ownsBackend && typeof close === 'function') {
      await closeQuietly('the sandbox backend', () => close.call(this.backend), this.#logger);
    }
  }
}

/** Factory form for the provider loader (`use: "@sbx/aio"` loads the class itself). */
export function createAioProvider(init: AioSandboxProviderInit): AioSandboxProvider {
  return new AioSandboxProvider(init);
}
