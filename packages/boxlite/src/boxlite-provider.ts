import {
  RegistrySandboxProvider,
  assertSameThreadIdentity,
  deriveSandboxScopeToken,
  specIdentityScope,
} from '@sbx/core/provider-kit';
import { randomBytes } from 'node:crypto';
import {
  ProviderClosedError,
  SandboxRuntimeError,
  type SandboxSpec,
  type SandboxSpecPolicy,
  type SandboxSpecSupport,
  assertValidThreadIdentity,
  resolveEffectiveUserId,
  shellQuote,
  throwIfAborted,
} from '@sbx/core';
import { DEFAULT_SPEC_POLICY, checkSandboxSpec, specPolicyWithin } from '@sbx/core/internal';
import type {
  AcquireOptions,
  ListSandboxesOptions,
  SandboxListingProvider,
  SandboxSummary,
  WarmEntry,
  WarmPoolDestroyReason,
} from '@sbx/core';
import type { BoxliteSettings } from './boxlite-config.js';
import { resolveBoxliteSettings } from './boxlite-config.js';
import type { BoxliteRuntime } from './boxlite-runtime.js';
import { BoxliteSandbox } from './boxlite-sandbox.js';
import type {
  ActiveBox,
  BoxIdentity,
  BoxliteProviderOptions,
  WarmBox,
} from './boxlite-provider-types.js';
import { boxSummary, sandboxIdOfBox } from './boxlite-listing.js';
import { BoxliteStartup, adoptLeftoverBoxes, openBoxliteRuntime } from './boxlite-startup.js';

export type { BoxIdentity, BoxliteProviderOptions, WarmBox } from './boxlite-provider-types.js';

const PROVIDER_NAME = 'boxlite';
const SHUT_DOWN_MESSAGE = 'BoxLite provider has been shut down';

/** Names a box of unknown identity in collision errors. */
const UNKNOWN_IDENTITY = 'an adopted box';

/**
 * BoxLite micro-VM sandboxes, one per (user, thread), kept warm between turns.
 *
 * - Identity: the box of (user, thread) is `<name_prefix><id>` with the shared 16-hex id, so it is
 *   found again after a restart (startup reconciliation adopts prefixed boxes into the warm pool).
 * - Acquire and release of one id are serialized (`AcquireSerializer`, keyed by the id); anonymous
 *   acquires (no thread) get a random id and never wait on that lock.
 * - Release parks the box in the shared `WarmPool`; only the same (user, thread) reclaims it, after
 *   a health check bounded in time on both sides (skipped within `health_check_skip_seconds` of
 *   this instance's own release). A box of another identity under the same id is never handed out.
 * - `replicas` is a soft cap on active + warm boxes: creating evicts warm boxes, oldest first, and
 *   never an active one. `idle_timeout` stops boxes parked longer (0 keeps them).
 * - A command failure that means the VM is gone evicts that box; the next acquire creates a new one.
 * - `reset()` hands every box over unstopped (adapters closed) for a replacement's start-up
 *   reconciliation to adopt; `shutdown()` stops every box and closes the runtime.
 * - `listSandboxes()` (`sbx ls`) shows the runtime's boxes of this prefix; there is no
 *   `reapOrphans()`: without an ownership store a box of another live process looks like an orphan.
 *
 * One concept, the lifecycle of this provider's boxes (acquire, release, eviction, teardown),
 * whose paths share the registry, the locks, the stops in flight and the shutdown re-checks; the
 * runtime's opening and start-up reconciliation (`boxlite-startup.ts`), the listing's summaries
 * and the types live in the files named for them.
 */
export class BoxliteProvider
  extends RegistrySandboxProvider<ActiveBox, WarmBox>
  implements SandboxListingProvider
{
  readonly settings: BoxliteSettings;
  readonly #options: BoxliteProviderOptions;
  /** Stops in flight per id: a box is never created under a name whose previous box is stopping. */
  readonly #stops = new Map<string, Promise<void>>();
  /** The runtime (opened on the first acquire or listing) and its start-up reconciliation. */
  readonly #startup: BoxliteStartup;

  constructor(options: BoxliteProviderOptions) {
    const settings = resolveBoxliteSettings(options.config);
    super({
      name: PROVIDER_NAME,
      settings,
      closedMessage: SHUT_DOWN_MESSAGE,
      clock: options.clock,
      logger: options.logger,
      background: options.background,
    });
    this.#options = options;
    this.settings = settings;
    this.#startup = new BoxliteStartup(
      () => openBoxliteRuntime(options, settings, this.logger),
      (runtime) =>
        adoptLeftoverBoxes(runtime, {
          registry: this.registry,
          prefix: settings.namePrefix,
          adapter: (id, box) => this.#adapter(id, box),
          onAdopt: (id) => this.events.emit({ type: 'adopt', sandboxId: id }),
          logger: this.logger,
        }),
    );
  }

  protected sandboxOf(active: ActiveBox): BoxliteSandbox {
    return active.sandbox;
  }

  /** A replacement finds every box again by its name (start-up reconciliation adopts it). */
  protected readonly handsOverOnReset = true;

  protected async handOver(_id: string, sandbox: BoxliteSandbox): Promise<void> {
    sandbox.markClosed();
  }

  protected async handOverWarm(entry: WarmEntry<WarmBox>): Promise<void> {
    entry.value.sandbox.markClosed();
  }

  /** The box name of a sandbox id. */
  boxName(sandboxId: string): string {
    return `${this.settings.namePrefix}${sandboxId}`;
  }

  /** The sandbox id of (user, thread), scoped by the spec when it changes what the box is. */
  sandboxIdFor(userId: string | undefined, threadId: string, spec?: SandboxSpec): string {
    // Checked here, not only in the default derivation: an override must not name a sandbox after
    // an id the rule refuses either.
    assertValidThreadIdentity({ userId, threadId });
    const scope = specIdentityScope(spec);
    const identity = {
      userId: resolveEffectiveUserId(userId),
      threadId,
      ...(scope ? { scope } : {}),
    };
    return this.#options.deriveSandboxId?.(identity) ?? deriveSandboxScopeToken(identity);
  }

  /** BoxLite boxes take an image, memory, CPUs and a disk size per box. */
  override get specSupport(): SandboxSpecSupport {
    return {
      image: true,
      resources: ['memoryMb', 'cpus', 'diskGb'],
      timeout: false,
      labels: false,
    };
  }

  /** Without sandbox.spec.max_*, a spec may only narrow the configured box size. */
  protected override get specPolicy(): SandboxSpecPolicy {
    return specPolicyWithin(this.#options.config?.specPolicy ?? DEFAULT_SPEC_POLICY, {
      memoryMb: this.settings.memoryMib,
      cpus: this.settings.cpus,
      diskGb: this.settings.diskSizeGb,
    });
  }

  override async acquire(options: AcquireOptions = {}): Promise<string> {
    this.admit(options);
    this.assertOpen();
    throwIfAborted(options.signal);
    const runtime = await this.#startup.reconciled();
    if (options.threadId === undefined) return this.#acquireAnonymous(runtime, options.signal);
    const spec = checkSandboxSpec(options.spec, this.specSupport, this.specPolicy, PROVIDER_NAME);
    const identity: BoxIdentity = {
      userId: resolveEffectiveUserId(options.userId),
      threadId: options.threadId,
      ...(spec ? { spec } : {}),
    };
    const id = this.sandboxIdFor(identity.userId, identity.threadId, spec);
    return this.locks.hold(id, () => this.#acquireThread(runtime, id, identity, options.signal), {
      signal: options.signal,
    });
  }

  override get(sandboxId: string): BoxliteSandbox | undefined {
    return this.registry.active.get(sandboxId)?.sandbox;
  }

  override async release(sandboxId: string): Promise<void> {
    const active = this.registry.active.get(sandboxId);
    if (active === undefined) return;
    if (active.identity === undefined) {
      // Nobody can ever reclaim a random id: parking it would only hold a replica slot until it
      // idles out, so it is stopped at once.
      this.registry.active.delete(sandboxId);
      await this.#stopBox(sandboxId, active.sandbox, 'anonymous_release');
      return;
    }
    if (this.closed) {
      // Shutdown is stopping every box; this one must not be parked behind its back.
      this.registry.active.delete(sandboxId);
      await this.#stopBox(sandboxId, active.sandbox, 'shutdown');
      return;
    }
    await this.locks.hold(sandboxId, () => this.#releaseThread(sandboxId));
  }

  /**
   * Every box of this name prefix the runtime knows (so also those of other processes sharing the
   * BoxLite home), with this instance's view of it (`active` / `warm`, and the identity when it
   * knows one) or else the runtime's own state. Boxes are found by name alone, which carries only
   * the hashed id: the (user, thread) of a box this instance does not track is unknown.
   *
   * Reads only. It opens the runtime without the start-up reconciliation: adopting boxes here
   * would hand them to this provider's `shutdown()`, and an inspecting process (`sbx ls`) shuts
   * down right after listing. Nothing is health-checked, claimed or stopped.
   */
  async listSandboxes(options: ListSandboxesOptions = {}): Promise<SandboxSummary[]> {
    const { signal } = options;
    this.assertOpen();
    throwIfAborted(signal);
    const runtime = await this.#startup.runtime();
    // After a reconciliation in flight, so a box it is adopting is not caught half-way.
    await this.#startup.reconciling?.catch(() => undefined);
    throwIfAborted(signal);
    const boxes = await runtime.list();
    throwIfAborted(signal);
    const out: SandboxSummary[] = [];
    for (const info of boxes) {
      const id = sandboxIdOfBox(this.settings.namePrefix, info.name);
      if (id === undefined) continue;
      out.push(boxSummary(this.registry, id, info, this.boxName(id)));
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // acquire

  async #acquireThread(
    runtime: BoxliteRuntime,
    id: string,
    identity: BoxIdentity,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    this.assertOpen();
    const active = this.registry.active.get(id);
    if (active !== undefined) {
      assertSameThreadIdentity(id, active.identity, identity, UNKNOWN_IDENTITY);
      return this.acquired(id, 'reuse');
    }
    if (await this.#reclaimWarm(id, identity)) return this.acquired(id, 'reclaim');
    throwIfAborted(signal);
    return this.acquired(await this.#create(runtime, id, identity), 'create');
  }

  async #acquireAnonymous(
    runtime: BoxliteRuntime,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const id = `anon-${randomBytes(6).toString('hex')}`;
    throwIfAborted(signal);
    return this.acquired(await this.#create(runtime, id, undefined), 'create');
  }

  /**
   * Promotes the warm box of `id` for `identity`, or returns false (nothing usable parked). A box
   * parked for another identity raises a collision and is left exactly as it was.
   */
  async #reclaimWarm(id: string, identity: BoxIdentity): Promise<boolean> {
    const entry = this.registry.pool.get(id);
    if (entry === undefined) return false;
    const stored = entry.value.identity;
    // An adopted box (identity unknown) goes to whoever maps to its id, after the health check.
    if (stored !== undefined) assertSameThreadIdentity(id, stored, identity, UNKNOWN_IDENTITY);
    // Taken out of the pool before the (slow) check, so the idle checker cannot stop it under us;
    // refused while a teardown holds it, in which case it is as good as gone.
    const taken = this.registry.pool.take(id, entry);
    if (taken === undefined) return false;
    const { sandbox } = taken.value;
    const age = this.clock.now() - taken.releasedAt;
    // An adopted box (identity unknown) is always checked: nothing here saw it healthy lately.
    const skip =
      stored !== undefined &&
      this.settings.healthCheckSkipSeconds > 0 &&
      age <= this.settings.healthCheckSkipSeconds * 1000;
    if (skip && !sandbox.closed) {
      this.registry.active.set(id, { sandbox, identity });
      this.logger.debug('Reclaimed a warm BoxLite box without a health check', { sandboxId: id });
      return true;
    }
    if (!sandbox.closed && (await sandbox.healthCheck(this.settings.healthCheckTimeoutSeconds))) {
      if (this.closed) {
        await this.#stopBox(id, sandbox, 'shutdown');
        throw new ProviderClosedError();
      }
      this.registry.active.set(id, { sandbox, identity });
      this.logger.debug('Reclaimed a warm BoxLite box', { sandboxId: id });
      return true;
    }
    this.logger.warn('Warm BoxLite box failed its health check; replacing it', {
      sandboxId: id,
    });
    await this.#stopBox(id, sandbox, 'health_check_failed');
    return false;
  }

  async #create(
    runtime: BoxliteRuntime,
    id: string,
    identity: BoxIdentity | undefined,
  ): Promise<string> {
    const sandbox = await this.registry.withCreationSlot(id, async () => {
      // A box of this name may still be stopping (evicted or failed a check just now).
      await this.#stops.get(id);
      const resources = identity?.spec?.resources;
      const box = await runtime.create({
        name: this.boxName(id),
        image: identity?.spec?.image ?? this.settings.image,
        rootfsPath: this.settings.rootfsPath,
        memoryMib: resources?.memoryMb ?? this.settings.memoryMib,
        cpus: resources?.cpus ?? this.settings.cpus,
        diskSizeGb: resources?.diskGb ?? this.settings.diskSizeGb,
      });
      const created = this.#adapter(id, box);
      await this.#bootstrap(id, created);
      return created;
    });
    if (this.closed) {
      await this.#stopBox(id, sandbox, 'shutdown');
      throw new ProviderClosedError();
    }
    // Nothing else registered this id meanwhile: a thread's creates run under its lock, reset()
    // and shutdown() close the locks (a create that outlives them is stopped just above), and
    // thread-less ids are random.
    this.registry.active.set(id, { sandbox, identity });
    this.logger.info('Created BoxLite box', { sandboxId: id, box: sandbox.box.name });
    return id;
  }

  /** Creates the user-data and skills directories; a box that cannot is stopped, not used. */
  async #bootstrap(id: string, sandbox: BoxliteSandbox): Promise<void> {
    const dirs = [
      '/mnt/user-data/workspace',
      '/mnt/user-data/uploads',
      '/mnt/user-data/outputs',
      this.settings.skillsContainerPath,
    ];
    let failure: unknown;
    try {
      const output = await sandbox.executeCommand(
        `mkdir -p ${dirs.map(shellQuote).join(' ')} && echo sbx-bootstrap-ok`,
      );
      if (!output.includes('sbx-bootstrap-ok')) failure = output;
    } catch (error) {
      failure = error;
    }
    if (failure === undefined) return;
    await this.#stopBox(id, sandbox, 'bootstrap_failed');
    throw new SandboxRuntimeError(`BoxLite box ${sandbox.box.name} could not be prepared`, {
      details: { sandbox_id: id },
      cause: failure,
    });
  }

  // -------------------------------------------------------------------------------------------
  // release, eviction, teardown

  async #releaseThread(id: string): Promise<void> {
    const active = this.registry.active.get(id);
    if (active === undefined) return;
    this.registry.active.delete(id);
    if (this.closed || active.sandbox.closed) {
      await this.#stopBox(id, active.sandbox, this.closed ? 'shutdown' : 'closed');
      return;
    }
    // A background process ends with the turn that started it, as on every provider; the box
    // itself is kept warm for the thread's next turn.
    await active.sandbox.endProcesses();
    const parked = this.registry.pool.put(id, {
      sandbox: active.sandbox,
      identity: active.identity,
    });
    if (parked === undefined) await this.#stopBox(id, active.sandbox, 'teardown_in_flight');
  }

  /**
   * A command found the VM gone. Only the registration of *this* adapter is dropped: a stale
   * adapter of an evicted box must not evict the box that replaced it under the same id.
   */
  #onTerminalFailure(sandbox: BoxliteSandbox): void {
    const id = sandbox.id;
    let dropped = false;
    if (this.registry.active.get(id)?.sandbox === sandbox) {
      this.registry.active.delete(id);
      dropped = true;
    }
    const warm = this.registry.pool.get(id);
    if (warm?.value.sandbox === sandbox && this.registry.pool.forget(id, warm)) dropped = true;
    if (!dropped) return;
    void this.#stopBox(id, sandbox, 'terminal_failure').catch(() => {});
  }

  protected destroyWarm(entry: WarmEntry<WarmBox>, reason: WarmPoolDestroyReason): Promise<void> {
    return this.#stopBox(entry.id, entry.value.sandbox, reason, true);
  }

  /**
   * Stops one box. Failures are logged; with `rethrow` (the warm pool's hook) they are also
   * reported, so the pool keeps the entry for a later pass instead of losing a running VM.
   */
  async #stopBox(
    id: string,
    sandbox: BoxliteSandbox,
    reason: string,
    rethrow = false,
  ): Promise<void> {
    const stop = sandbox.stop();
    const tracked = stop.then(
      () => {},
      () => {},
    );
    this.#stops.set(id, tracked);
    void tracked.then(() => {
      if (this.#stops.get(id) === tracked) this.#stops.delete(id);
    });
    try {
      await stop;
      this.logger.info('Stopped BoxLite box', { sandboxId: id, box: sandbox.box.name, reason });
    } catch (error) {
      this.logger.error('Failed to stop BoxLite box', {
        sandboxId: id,
        box: sandbox.box.name,
        reason,
        error,
      });
      if (rethrow) throw error;
    }
  }

  protected async teardownAll(): Promise<void> {
    await this.registry.pool.destroyAll();
    const active = [...this.registry.active];
    this.registry.active.clear();
    await Promise.all(active.map(([id, a]) => this.#stopBox(id, a.sandbox, 'shutdown')));
    const left = this.registry.pool.ids();
    if (left.length > 0) {
      this.logger.error('BoxLite boxes could not be stopped at shutdown', { sandboxIds: left });
    }
    const runtime = this.#startup.opened;
    if (runtime === undefined) return;
    try {
      await (await runtime).close();
    } catch (error) {
      // A runtime that never opened (missing SDK, no KVM) has nothing to close.
      this.logger.debug('BoxLite runtime did not close cleanly', { error });
    }
  }

  #adapter(id: string, box: BoxliteSandbox['box']): BoxliteSandbox {
    return new BoxliteSandbox(id, {
      box,
      environment: this.settings.environment,
      commandTimeoutSeconds: this.settings.commandTimeoutSeconds,
      onTerminalFailure: (sandbox) => this.#onTerminalFailure(sandbox),
      clock: this.clock,
      logger: this.logger,
      ...(this.#options.terminalMarkers ? { terminalMarkers: this.#options.terminalMarkers } : {}),
    });
  }
}

/** Factory form of `new BoxliteProvider(init)` (what `use: "@sbx/boxlite"` resolves to). */
export function createBoxliteProvider(init: BoxliteProviderOptions): BoxliteProvider {
  return new BoxliteProvider(init);
}
