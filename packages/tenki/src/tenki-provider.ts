import {
  RegistrySandboxProvider,
  deriveSandboxScopeToken,
  specIdentityScope,
} from '@sbx/core/provider-kit';
import { randomBytes } from 'node:crypto';
import {
  errorMessage,
  ProviderClosedError,
  SandboxRuntimeError,
  type SandboxSpec,
  type SandboxSpecPolicy,
  type SandboxSpecSupport,
  assertValidThreadIdentity,
  resolveEffectiveUserId,
  throwIfAborted,
} from '@sbx/core';
import { DEFAULT_SPEC_POLICY, checkSandboxSpec, specPolicyWithin } from '@sbx/core/internal';
import type {
  AcquireOptions,
  Clock,
  ModuleImporter,
  SandboxProviderInit,
  WarmEntry,
  WarmPoolDestroyReason,
} from '@sbx/core';
import type { TenkiClient, TenkiCreateOptions, TenkiRemoteSandbox } from './tenki-client.js';
import { resolveTenkiClient } from './tenki-client.js';
import type { TenkiSettings } from './tenki-config.js';
import { resolveTenkiSettings } from './tenki-config.js';
import { bootstrapTenkiSandbox } from './tenki-bootstrap.js';
import { TenkiSandbox } from './tenki-sandbox.js';

export interface TenkiProviderOptions extends SandboxProviderInit {
  /** The client, or a function building it on first use. Takes precedence over `clientModule`. */
  readonly client?: TenkiClient | (() => Promise<TenkiClient>);
  /**
   * npm name of a module exporting `createTenkiClient(options)` (or a default factory), imported
   * on first use. Default: `sandbox.tenki.client_module`.
   */
  readonly clientModule?: string;
  /** Loads `clientModule`; default a dynamic `import()`. */
  readonly importer?: ModuleImporter;
  /** Drives idle expiry and every deadline. Default: the system clock. */
  readonly clock?: Clock;
  /**
   * The sandbox id of (user, thread). Default: `deriveSandboxScopeToken` of `@sbx/core`
   * (sha256("<user>:<thread>")[:16], shared with every remote provider). Override only for tests
   * or migrations.
   */
  readonly deriveSandboxId?: (identity: { userId: string; threadId: string }) => string;
}

const PROVIDER_NAME = 'tenki';
const SHUT_DOWN_MESSAGE = 'Tenki provider has been shut down';

/**
 * Tenki cloud microVMs, one per (user, thread), kept warm between turns.
 *
 * - Identity: sandbox id `sha256("<user>:<thread>")[:16]` (the shared derivation), VM name
 *   `<name_prefix><id>`. The warm pool is keyed by that id alone: the id already encodes the
 *   identity, so no separate identity table is kept.
 * - Acquire and release of one id are serialized (`AcquireSerializer`); thread-less acquires get a
 *   random id and are terminated at release (nobody could reclaim them).
 * - Create asks for the VM without waiting, then waits for readiness itself: a VM that never gets
 *   ready is terminated rather than leaked. A best-effort bootstrap prepares HOME.
 * - Reclaim runs a bounded liveness check first; a dead VM is terminated and replaced.
 * - A session-ending failure evicts the VM; the next acquire creates a new one.
 * - `replicas` soft cap (evicts warm VMs, never active ones), `idle_timeout` expiry; `reset()` is
 *   `shutdown()` (nothing finds a VM again), which terminates everything.
 *
 * Single-process: VMs of a crashed process are not adopted (Tenki's `max_duration` ends them).
 *
 * One concept, the lifecycle of this provider's microVMs (acquire, release, eviction, teardown),
 * whose paths share the registry, the locks and the shutdown re-checks; the bootstrap
 * (`tenki-bootstrap.ts`) and which client to use (`tenki-client.ts`) live in their own files.
 */
export class TenkiSandboxProvider extends RegistrySandboxProvider<TenkiSandbox, TenkiSandbox> {
  readonly settings: TenkiSettings;
  readonly #options: TenkiProviderOptions;
  /** Active sandboxes created without a thread; terminated at release. */
  readonly #anonymous = new Set<string>();
  #client: Promise<TenkiClient> | undefined;

  constructor(options: TenkiProviderOptions) {
    const settings = resolveTenkiSettings(options.config);
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
  }

  protected sandboxOf(active: TenkiSandbox): TenkiSandbox {
    return active;
  }

  /** Nothing finds a Tenki sandbox again in another instance: `reset()` terminates them. */
  protected readonly handsOverOnReset = false;

  protected handOver(): Promise<void> {
    return Promise.resolve();
  }

  protected handOverWarm(): Promise<void> {
    return Promise.resolve();
  }

  sandboxName(sandboxId: string): string {
    return `${this.settings.namePrefix}${sandboxId}`;
  }

  /** The sandbox id of (user, thread), scoped by the spec when it changes what the VM is. */
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

  /** Tenki VMs take an image, CPU cores and memory per VM. */
  override get specSupport(): SandboxSpecSupport {
    return { image: true, resources: ['memoryMb', 'cpus'], timeout: false, labels: false };
  }

  /** Without sandbox.spec.max_*, a spec may only narrow the configured VM size. */
  protected override get specPolicy(): SandboxSpecPolicy {
    return specPolicyWithin(this.#options.config?.specPolicy ?? DEFAULT_SPEC_POLICY, {
      memoryMb: this.settings.memoryMb,
      cpus: this.settings.cpuCores,
    });
  }

  override async acquire(options: AcquireOptions = {}): Promise<string> {
    this.admit(options);
    this.assertOpen();
    throwIfAborted(options.signal);
    const client = await this.#ensureClient();
    if (options.threadId === undefined) {
      const id = `anon-${randomBytes(6).toString('hex')}`;
      await this.#create(client, id);
      this.#anonymous.add(id);
      return this.acquired(id, 'create');
    }
    const spec = checkSandboxSpec(
      options.spec,
      this.specSupport,
      this.specPolicy,
      'TenkiSandboxProvider',
    );
    const id = this.sandboxIdFor(options.userId, options.threadId, spec);
    return this.locks.hold(id, () => this.#acquireThread(client, id, options.signal, spec), {
      signal: options.signal,
    });
  }

  override get(sandboxId: string): TenkiSandbox | undefined {
    return this.registry.active.get(sandboxId);
  }

  override async release(sandboxId: string): Promise<void> {
    const sandbox = this.registry.active.get(sandboxId);
    if (sandbox === undefined) return;
    if (this.#anonymous.has(sandboxId) || this.closed) {
      this.registry.active.delete(sandboxId);
      this.#anonymous.delete(sandboxId);
      await this.#terminateQuietly(
        sandboxId,
        sandbox,
        this.closed ? 'shutdown' : 'anonymous_release',
      );
      return;
    }
    await this.locks.hold(sandboxId, async () => {
      const current = this.registry.active.get(sandboxId);
      if (current === undefined) return;
      this.registry.active.delete(sandboxId);
      if (this.closed || current.closed) {
        await this.#terminateQuietly(sandboxId, current, this.closed ? 'shutdown' : 'closed');
        return;
      }
      // A background process ends with the turn that started it, as on every provider; the
      // microVM itself is kept warm for the thread's next turn.
      await current.endProcesses();
      if (this.registry.pool.put(sandboxId, current) === undefined) {
        await this.#terminateQuietly(sandboxId, current, 'teardown_in_flight');
      }
    });
  }

  async #acquireThread(
    client: TenkiClient,
    id: string,
    signal: AbortSignal | undefined,
    spec: SandboxSpec | undefined,
  ): Promise<string> {
    this.assertOpen();
    if (this.registry.active.has(id)) return this.acquired(id, 'reuse');
    if (await this.#reclaimWarm(id)) return this.acquired(id, 'reclaim');
    throwIfAborted(signal);
    await this.#create(client, id, spec);
    return this.acquired(id, 'create');
  }

  async #reclaimWarm(id: string): Promise<boolean> {
    const entry = this.registry.pool.get(id);
    if (entry === undefined) return false;
    // Out of the pool before the check, so the idle checker cannot terminate it under us.
    const taken = this.registry.pool.take(id, entry);
    if (taken === undefined) return false;
    const sandbox = taken.value;
    if (await sandbox.healthCheck(this.settings.healthCheckTimeoutSeconds)) {
      if (this.closed) {
        await this.#terminateQuietly(id, sandbox, 'shutdown');
        throw new ProviderClosedError(SHUT_DOWN_MESSAGE);
      }
      this.registry.active.set(id, sandbox);
      return true;
    }
    this.logger.warn('Warm Tenki sandbox failed its liveness check; replacing it', {
      sandboxId: id,
    });
    await this.#terminateQuietly(id, sandbox, 'health_check_failed');
    return false;
  }

  async #create(client: TenkiClient, id: string, spec?: SandboxSpec): Promise<void> {
    const sandbox = await this.registry.withCreationSlot(id, async () => {
      const remote = await client.create(this.#createOptions(id, spec));
      await this.#waitReady(id, remote);
      const created = this.#adapter(id, remote);
      await bootstrapTenkiSandbox(created, this.settings.homeDir, this.logger);
      return created;
    });
    if (this.closed) {
      await this.#terminateQuietly(id, sandbox, 'shutdown');
      throw new ProviderClosedError(SHUT_DOWN_MESSAGE);
    }
    // Nothing else registered this id meanwhile: a thread's creates run under its lock, reset()
    // and shutdown() close the locks (a create that outlives them is terminated just above), and
    // thread-less ids are random.
    this.registry.active.set(id, sandbox);
    this.logger.info('Created Tenki sandbox', { sandboxId: id, remoteId: sandbox.remote.id });
  }

  #createOptions(id: string, spec?: SandboxSpec): TenkiCreateOptions {
    const s = this.settings;
    const image = spec?.image ?? s.image;
    const cpuCores = spec?.resources?.cpus ?? s.cpuCores;
    const memoryMb = spec?.resources?.memoryMb ?? s.memoryMb;
    return {
      name: this.sandboxName(id),
      workspaceId: s.workspaceId ?? null,
      sticky: s.sticky,
      wait: false,
      ...(s.maxDurationSeconds > 0 ? { maxDurationSeconds: s.maxDurationSeconds } : {}),
      ...(image !== undefined ? { image } : {}),
      ...(cpuCores !== undefined ? { cpuCores } : {}),
      ...(memoryMb !== undefined ? { memoryMb } : {}),
      ...(Object.keys(s.environment).length > 0 ? { env: s.environment } : {}),
    };
  }

  /** A VM that never gets ready is terminated here, while its handle is still ours. */
  async #waitReady(id: string, remote: TenkiRemoteSandbox): Promise<void> {
    try {
      await remote.waitReady(this.settings.readyTimeoutSeconds);
    } catch (error) {
      try {
        await remote.close();
      } catch (closeError) {
        this.logger.error(
          'Failed to terminate a Tenki sandbox that never became ready; it may leak until its max_duration',
          {
            sandboxId: id,
            remoteId: remote.id,
            error: closeError,
          },
        );
      }
      throw new SandboxRuntimeError(
        `Tenki sandbox ${this.sandboxName(id)} did not become ready: ${errorMessage(error)}`,
        { cause: error },
      );
    }
  }

  /** Drops only this adapter's registrations, so a stale adapter cannot evict its replacement. */
  #onTerminalFailure(sandbox: TenkiSandbox): void {
    const id = sandbox.id;
    let dropped = false;
    if (this.registry.active.get(id) === sandbox) {
      this.registry.active.delete(id);
      this.#anonymous.delete(id);
      dropped = true;
    }
    const warm = this.registry.pool.get(id);
    if (warm?.value === sandbox && this.registry.pool.forget(id, warm)) dropped = true;
    if (dropped) void this.#terminateQuietly(id, sandbox, 'terminal_failure');
  }

  protected async destroyWarm(
    entry: WarmEntry<TenkiSandbox>,
    reason: WarmPoolDestroyReason,
  ): Promise<void> {
    await entry.value.terminate();
    this.logger.info('Terminated warm Tenki sandbox', { sandboxId: entry.id, reason });
  }

  /** Terminates, logging instead of throwing: used where the caller has nothing better to do. */
  async #terminateQuietly(id: string, sandbox: TenkiSandbox, reason: string): Promise<void> {
    try {
      await sandbox.terminate();
      this.logger.info('Terminated Tenki sandbox', { sandboxId: id, reason });
    } catch (error) {
      this.logger.error('Failed to terminate Tenki sandbox', { sandboxId: id, reason, error });
    }
  }

  protected async teardownAll(): Promise<void> {
    await this.registry.pool.destroyAll();
    const active = [...this.registry.active];
    this.registry.active.clear();
    this.#anonymous.clear();
    await Promise.all(
      active.map(([id, sandbox]) => this.#terminateQuietly(id, sandbox, 'shutdown')),
    );
    const left = this.registry.pool.ids();
    if (left.length > 0) {
      this.logger.error('Tenki sandboxes could not be terminated at shutdown', {
        sandboxIds: left,
      });
    }
    const client = this.#client;
    if (client === undefined) return;
    try {
      await (await client).close?.();
    } catch (error) {
      this.logger.debug('Tenki client did not close cleanly', { error });
    }
  }

  #ensureClient(): Promise<TenkiClient> {
    if (this.#client === undefined) {
      const loading = resolveTenkiClient(
        this.#options.client,
        this.#options.clientModule ?? this.settings.clientModule,
        { apiKey: this.settings.apiKey, baseUrl: this.settings.baseUrl },
        this.#options.importer,
      );
      this.#client = loading;
      // A failed load is not kept: the next acquire tries again (e.g. after installing the module).
      loading.catch(() => {
        if (this.#client === loading) this.#client = undefined;
      });
    }
    return this.#client;
  }

  #adapter(id: string, remote: TenkiRemoteSandbox): TenkiSandbox {
    return new TenkiSandbox(id, {
      remote,
      homeDir: this.settings.homeDir,
      environment: this.settings.environment,
      commandTimeoutSeconds: this.settings.commandTimeoutSeconds,
      onTerminalFailure: (sandbox) => this.#onTerminalFailure(sandbox),
      clock: this.clock,
      logger: this.logger,
    });
  }
}

/** Factory form of `new TenkiSandboxProvider(init)`. */
export function createTenkiProvider(init: TenkiProviderOptions): TenkiSandboxProvider {
  return new TenkiSandboxProvider(init);
}
