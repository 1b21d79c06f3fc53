import {
  ProviderClosedError,
  SandboxProvider,
  SerializerClosedError,
  resolveEffectiveUserId,
  resolveOwnershipConfig,
  silentLogger,
  systemClock,
  threadLayout,
} from '@sbx/core';
import type {
  AcquireOptions,
  AcquirePath,
  Clock,
  Logger,
  ResolvedOwnershipConfig,
  SandboxProviderEventListener,
  SandboxLifecycleSupport,
  SandboxSpecPolicy,
  SandboxSpecSupport,
  SyncAgentSkillsOptions,
} from '@sbx/core';
import { DEFAULT_SPEC_POLICY, checkSandboxSpec } from '@sbx/core/internal';
import {
  AcquireSerializer,
  PeriodicTask,
  SandboxBook,
  SandboxProviderEventEmitter,
  Sightings,
  SingleFlight,
  WarmPool,
  serializerKey,
} from '@sbx/core/provider-kit';
import { E2BAcquirePaths } from './e2b-acquire-paths.js';
import { E2BCapacity } from './e2b-capacity.js';
import type { E2BClient } from './e2b-client.js';
import { resolveE2BSettings } from './e2b-config.js';
import type { E2BSettings } from './e2b-config.js';
import { errorMessage } from './e2b-errors.js';
import { E2BInspection } from './e2b-inspection.js';
import { E2BLeaseRenewal } from './e2b-lease-renewal.js';
import { E2BPauses } from './e2b-pauses.js';
import type {
  E2BListSandboxesOptions,
  E2BOrphanReapReport,
  E2BReapOrphansOptions,
  E2BSandboxSummary,
} from './e2b-inspection.js';
import type { ActiveEntry, E2BProviderContext, Stores, WarmValue } from './e2b-provider-context.js';
import type { E2BCapacitySnapshot, E2BProviderInit } from './e2b-provider-init.js';
import { openE2BStores } from './e2b-stores.js';
import { E2BReconciler } from './e2b-reconciler.js';
import type { ReconciliationStats } from './e2b-reconciler.js';
import { E2BSandbox } from './e2b-sandbox.js';
import { E2BTeardown } from './e2b-teardown.js';
import { specFingerprint, threadSeed } from './e2b-thread-key.js';
import type { ThreadKey } from './e2b-thread-key.js';
import { E2BUploads } from './e2b-uploads.js';
import { LocalSlots } from './local-slots.js';
import { SdkE2BClient } from './sdk-client.js';

/**
 * E2B micro-VM provider: one VM per (user, thread), parked warm between turns, capacity limited per
 * process or — with Redis ownership — across the deployment through the shared capacity ledger.
 * See the package README for the lifecycle, capacity policies and reconciliation.
 *
 * The class wires the provider kit to the E2B SDK and keeps the public API; the lifecycle lives in
 * its collaborators, each given the same context and book: `E2BAcquirePaths`, `E2BCapacity`,
 * `E2BTeardown` (stops, forgets, renewal, shutdown), `E2BReconciler` and `E2BInspection`.
 *
 * One concept, kept whole: what remains here is that wiring, the public API delegating to it and
 * the plumbing every collaborator shares (the SDK pool, the stores, in-flight tracking).
 */
export class E2BSandboxProvider extends SandboxProvider {
  readonly settings: E2BSettings;
  readonly ownership: ResolvedOwnershipConfig;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #client: E2BClient;
  readonly #serializer: AcquireSerializer;
  readonly #init: E2BProviderInit;
  readonly #events: SandboxProviderEventEmitter;
  readonly #book: SandboxBook<ActiveEntry, WarmValue>;
  readonly #ctx: E2BProviderContext;
  readonly #teardown: E2BTeardown;
  readonly #capacity: E2BCapacity;
  readonly #paths: E2BAcquirePaths;
  readonly #pauses: E2BPauses;
  readonly #uploads: E2BUploads;
  readonly #reconciler: E2BReconciler;
  readonly #inspection: E2BInspection;
  readonly #leases: E2BLeaseRenewal;
  readonly #renewal: PeriodicTask;
  readonly #reconciliation: PeriodicTask;
  readonly #reconciling = new SingleFlight<ReconciliationStats>();
  #stores: Promise<Stores> | undefined;
  #openedStores: Stores | undefined;
  /** `reset()` or `shutdown()` began: new calls are refused, capacity waiters give up. */
  #closed = false;
  /** `shutdown()` began: what an operation in flight makes from now on is killed, not kept. */
  #shuttingDown = false;
  /** Acquires and releases in flight, which `reset()` lets finish before it hands over. */
  readonly #inFlight = new Set<Promise<unknown>>();
  #shutdown: Promise<void> | undefined;
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
    const slots = new LocalSlots(() => this.#capacity.notify());
    const pool = new WarmPool<WarmValue>({
      destroy: (entry, reason) => this.#teardown.destroyWarm(entry, reason),
      idleTimeoutSeconds: this.settings.idleTimeoutSeconds,
      checkIntervalSeconds: init.config.warmPool.idleCheckIntervalSeconds,
      replicas: this.settings.capacityLimit,
      clock: this.#clock,
      logger: this.#logger,
      name: 'e2b',
    });
    const ownedRemoteOps = new Set<string>();
    const unownedRemoteOps = new Set<string>();
    this.#book = new SandboxBook<ActiveEntry, WarmValue>({
      pool,
      clock: this.#clock,
      extraState: (id) =>
        slots.tombstones.has(id)
          ? 'tombstone'
          : ownedRemoteOps.has(id) || unownedRemoteOps.has(id)
            ? 'adopting'
            : undefined,
    });
    this.#ctx = this.#context(slots, ownedRemoteOps, unownedRemoteOps);
    this.#teardown = new E2BTeardown(this.#ctx);
    this.#capacity = new E2BCapacity(this.#ctx, this.#teardown);
    this.#uploads = new E2BUploads(this.#ctx);
    this.#paths = new E2BAcquirePaths(this.#ctx, this.#teardown, this.#capacity, this.#uploads);
    this.#pauses = new E2BPauses({
      ctx: this.#ctx,
      teardown: this.#teardown,
      paths: this.#paths,
      hold: (key, work) => this.#holdThread(key, work),
      leaseOwner: this,
    });
    this.#reconciler = new E2BReconciler(this.#ctx, this.#teardown, this.#capacity);
    this.#inspection = new E2BInspection(this.#ctx, this.#reconciler);
    this.#leases = new E2BLeaseRenewal(this.#ctx);
    const task = (name: string, intervalMs: number, run: () => Promise<unknown>) =>
      new PeriodicTask({ name, intervalMs, run, clock: this.#clock, logger: this.#logger });
    this.#renewal = task('Lease renewal', this.ownership.renewalIntervalSeconds * 1000, () =>
      this.renewLeases(),
    );
    this.#reconciliation = task(
      'E2B reconciliation',
      this.settings.reconciliation.intervalSeconds * 1000,
      () => this.reconcileNow(),
    );
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

  #context(
    slots: LocalSlots,
    ownedRemoteOps: Set<string>,
    unownedRemoteOps: Set<string>,
  ): E2BProviderContext {
    const book = this.#book;
    return {
      settings: this.settings,
      ownershipConfig: this.ownership,
      logger: this.#logger,
      clock: this.#clock,
      client: this.#client,
      events: this.#events,
      serializer: this.#serializer,
      book,
      slots,
      ownedRemoteOps,
      unownedRemoteOps,
      reaping: new Set<string>(),
      vmTimeouts: new Map<string, number>(),
      firstSeen: new Sightings(),
      stores: () => this.#stores_(),
      clientIfReady: () => this.#openedStores?.ownership,
      ready: () => this.ready(),
      isClosed: () => this.#closed,
      isShuttingDown: () => this.#shuttingDown,
      assertOpen: () => this.#assertOpen(),
      reconciling: () => this.#reconciling.current,
      notify: () => this.#capacity.notify(),
      notifySoon: () => setImmediate(() => this.#capacity.notify()),
      acquired: (sandboxId: string, path: AcquirePath) => {
        this.#events.emit({ type: 'acquire', sandboxId, path });
        return sandboxId;
      },
      adapter: (id, remote) =>
        new E2BSandbox(id, remote, {
          homeDir: this.settings.homeDir,
          defaultCommandTimeoutMs: this.settings.commandTimeoutMs,
          logger: this.#logger,
        }),
      sdk: (fn) => this.#sdk(fn),
      connectOptions: () =>
        this.settings.idleTimeoutSeconds > 0
          ? { timeoutMs: this.settings.idleTimeoutSeconds * 1000 }
          : {},
      seedOf: (key) => threadSeed(this.settings.skillsRoot, key),
      isTrackedLocally: (id) => book.stateOf(id) !== 'untracked',
    };
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
    const s = this.#ctx.slots;
    return {
      limit: this.settings.capacityLimit,
      active: this.#book.activeCount,
      warm: this.#book.pool.size,
      reserved: s.reserved,
      transitioning: s.transitioning,
      tombstones: s.tombstones.size,
      total: this.#capacity.total(),
    };
  }

  /** Ids parked warm, oldest first. */
  warmIds(): string[] {
    return this.#book.pool.ids();
  }

  /** Ids whose destruction is unconfirmed. */
  tombstoneIds(): string[] {
    return [...this.#ctx.slots.tombstones.keys()];
  }

  /** Owned remote ids in flight (shutdown kills them). */
  remoteOpIds(): string[] {
    return [...this.#ctx.ownedRemoteOps];
  }

  ownsLease(id: string): boolean {
    return this.#ctx.clientIfReady()?.holds(id) ?? false;
  }

  get isShutdown(): boolean {
    return this.#closed;
  }

  // ------------------------------------------------------------------------------------------
  // lifecycle

  /** Pause and resume on the SDK's terms (see `E2BPauses`); snapshot not offered. */
  override get lifecycleSupport(): SandboxLifecycleSupport {
    return { pause: true, snapshot: false };
  }

  /** `Sandbox.pause` of a VM this instance holds, parked warm first. See `E2BPauses`. */
  override async pause(sandboxId: string): Promise<void> {
    this.#assertOpen();
    await this.#stores_();
    await this.#tracked(this.#pauses.pause(sandboxId));
  }

  /** Takes a paused (or warm) VM back active; `connect` resumes it. */
  override async resume(sandboxId: string): Promise<void> {
    this.#assertOpen();
    await this.#stores_();
    await this.#tracked(this.#pauses.resume(sandboxId));
  }

  async #holdThread<T>(key: ThreadKey, work: () => Promise<T>): Promise<T> {
    try {
      return await this.#serializer.hold(this.#serializerKey(key), work);
    } catch (error) {
      if (error instanceof SerializerClosedError) throw this.#closedError();
      throw error;
    }
  }

  override get(sandboxId: string): E2BSandbox | undefined {
    return this.#book.active(sandboxId)?.sandbox;
  }

  override acquire(options: AcquireOptions = {}): Promise<string> {
    return this.#tracked(this.#acquire(options));
  }

  async #acquire(options: AcquireOptions): Promise<string> {
    this.#assertOpen();
    this.admit(options);
    await this.#stores_();
    this.#assertOpen();
    const uploadShared = options.skillPolicy === undefined;
    const labels = options.spec?.labels;
    if (options.threadId === undefined) {
      // A thread-less sandbox has no identity to find it again by: never serialized, never reused.
      return this.#ctx.acquired(
        await this.#paths.create(undefined, uploadShared, labels),
        'create',
      );
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
          const reused = await this.#paths.reuse(key);
          if (reused !== undefined) return this.#ctx.acquired(reused, 'reuse');
          const reclaimed = await this.#paths.reclaim(key);
          if (reclaimed !== undefined) return this.#ctx.acquired(reclaimed, 'reclaim');
          const discovered = await this.#paths.discover(key);
          if (discovered !== undefined) return this.#ctx.acquired(discovered, 'discover');
          return this.#ctx.acquired(await this.#paths.create(key, uploadShared, labels), 'create');
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

  override release(sandboxId: string): Promise<void> {
    return this.#tracked(this.#release(sandboxId));
  }

  async #release(sandboxId: string): Promise<void> {
    const entry = this.#book.active(sandboxId);
    if (entry === undefined) return;
    if (entry.key === undefined) {
      await this.#teardown.releaseAnonymous(sandboxId, entry);
      return;
    }
    try {
      await this.#serializer.hold(this.#serializerKey(entry.key), () =>
        this.#teardown.releaseLocked(sandboxId),
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
      () => this.#uploads.syncSkills(sandboxId, key, options),
      { signal: options.signal },
    );
  }

  /**
   * The reset contract (docs/architecture.md): stops background work, releases what this
   * instance holds and refuses further use. A replacement finds every VM again by its tags, so
   * none is killed: clients are closed, leases given up (so the replacement takes them at once,
   * not one TTL later), capacity waiters woken with reason `shutdown`. Acquires, releases and a
   * reconciliation pass already in flight finish first, and what they produced is handed over
   * too: a VM installed after the hand-over would keep a lease nothing renews or gives up. After a
   * `shutdown()` it is a no-op, and a `shutdown()` after it kills nothing.
   */
  override async reset(): Promise<void> {
    this.#shutdown ??= this.#retire(async () => {
      // Queued acquires are refused; the ones holding their thread's lock run on.
      this.#serializer.close();
      this.#capacity.notify();
      await Promise.all([this.#renewal.stop(), this.#reconciliation.stop()]);
      while (this.#inFlight.size > 0 || this.#reconciling.current !== undefined) {
        await Promise.allSettled([...this.#inFlight, this.#reconciling.current]);
      }
      return this.#teardown.handOverAll();
    });
    return this.#shutdown;
  }

  override shutdown(): Promise<void> {
    if (this.#shutdown === undefined) {
      this.#shuttingDown = true;
      this.#shutdown = this.#retire(() => this.#teardown.shutdownAll());
    }
    return this.#shutdown;
  }

  // ------------------------------------------------------------------------------------------
  // acquire paths

  // ------------------------------------------------------------------------------------------
  // background: lease renewal and reconciliation

  #startBackground(): void {
    if (this.#closed) return;
    this.#book.pool.start();
    this.#renewal.start();
    this.#reconciliation.start();
    // The startup pass runs in the background: acquire never waits for it.
    void this.#reconciliation.runNow();
  }

  /**
   * Renews every lease we hold. A store that cannot answer means "unknown": keep and retry. An
   * absent lease is re-claimed (at once for a VM in use, one renewal interval later for one only
   * parked); a lease a peer holds makes us forget the VM without touching it.
   */
  async renewLeases(): Promise<void> {
    await this.#leases.renewLeases();
  }

  /** One reconciliation pass (shared if one is already running). */
  reconcileNow(): Promise<ReconciliationStats> {
    return this.#reconciling.run(() => this.#reconciler.reconcilePass());
  }

  /**
   * Every VM of this provider tag and ledger, within the reconciliation budgets, with this
   * instance's view (`active` / `warm`) or else the control plane's state. Reads only: nothing is
   * probed, claimed or killed.
   */
  listSandboxes(options: E2BListSandboxesOptions = {}): Promise<E2BSandboxSummary[]> {
    return this.#inspection.listSandboxes(options);
  }

  /** Kills orphans and duplicates by reconciliation's own rules (see `E2BInspection`). */
  reapOrphans(options: E2BReapOrphansOptions = {}): Promise<E2BOrphanReapReport> {
    return this.#inspection.reapOrphans(options);
  }

  async #retire(release: () => Promise<Stores | undefined>): Promise<void> {
    this.#closed = true;
    void this.#renewal.stop();
    void this.#reconciliation.stop();
    const stores = await release();
    await this.#reconciling.current?.catch(() => undefined);
    if (stores?.ownsOwnership) await stores.ownership.store.close().catch(() => undefined);
    if (stores?.ownsCapacity) await stores.capacity?.close().catch(() => undefined);
  }

  // ------------------------------------------------------------------------------------------
  // plumbing

  #tracked<T>(work: Promise<T>): Promise<T> {
    this.#inFlight.add(work);
    const done = (): void => {
      this.#inFlight.delete(work);
    };
    work.then(done, done);
    return work;
  }

  #assertOpen(): void {
    if (this.#closed) throw this.#closedError();
  }

  #closedError(): ProviderClosedError {
    return new ProviderClosedError('E2BSandboxProvider has been shut down');
  }

  #serializerKey(key: ThreadKey): string {
    return serializerKey(key.userId, key.threadId, this.settings.skillsRoot, key.spec);
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
    this.#stores ??= openE2BStores({
      init: this.#init,
      ownership: this.ownership,
      settings: this.settings,
      logger: this.#logger,
      clock: this.#clock,
      emit: (event) => this.#events.emit(event),
    }).then((stores) => {
      this.#openedStores = stores;
      return stores;
    });
    return this.#stores;
  }
}

/** Factory form for `use: "@sbx/e2b"` hosts that prefer functions. */
export function createE2BProvider(init: E2BProviderInit): E2BSandboxProvider {
  return new E2BSandboxProvider(init);
}
