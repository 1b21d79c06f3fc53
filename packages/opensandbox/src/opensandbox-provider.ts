import {
  RegistrySandboxProvider,
  assertSameThreadIdentity,
  deriveSandboxScopeToken,
  specIdentityScope,
} from '@sbx/core/provider-kit';
import { randomUUID } from 'node:crypto';
import {
  ProviderClosedError,
  SandboxRuntimeError,
  type SandboxSpecPolicy,
  type SandboxSpecSupport,
  resolveEffectiveUserId,
  shellQuote,
  throwIfAborted,
} from '@sbx/core';
import { DEFAULT_SPEC_POLICY, checkSandboxSpec } from '@sbx/core/internal';
import type {
  AcquireOptions,
  ListSandboxesOptions,
  SandboxListingProvider,
  SandboxSummary,
  WarmEntry,
  WarmPoolDestroyReason,
} from '@sbx/core';
import type { OpenSandboxSettings } from './opensandbox-config.js';
import {
  BOOTSTRAP_TIMEOUT_SECONDS,
  HEALTH_CHECK_TIMEOUT_SECONDS,
  connectionWarnings,
  resolveOpenSandboxSettings,
} from './opensandbox-config.js';
import { OpenSandboxSandbox } from './opensandbox-sandbox.js';
import type { OpenSandboxSdk } from './opensandbox-sdk.js';
import { sdkLoader } from './opensandbox-sdk.js';
import { describeRemoteError } from './terminal-errors.js';
import { connectionConfigFor, remoteCreateOptions } from './opensandbox-remote-options.js';
import { listOpenSandboxes } from './opensandbox-listing.js';
import {
  BOOTSTRAP_DIRECTORIES,
  PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE,
  PROVIDER_SHUT_DOWN_MESSAGE,
  UNKNOWN_IDENTITY,
  requiredLogger,
} from './opensandbox-provider-types.js';
import type {
  ActiveSandbox,
  OpenSandboxIdentity,
  OpenSandboxProviderOptions,
  WarmOpenSandbox,
} from './opensandbox-provider-types.js';

export {
  BOOTSTRAP_DIRECTORIES,
  LIST_PAGE_SIZE,
  OPENSANDBOX_METADATA,
  OPENSANDBOX_PROVIDER_TAG_VALUE,
  PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE,
  PROVIDER_SHUT_DOWN_MESSAGE,
} from './opensandbox-provider-types.js';
export type {
  OpenSandboxIdentity,
  OpenSandboxProviderOptions,
  WarmOpenSandbox,
} from './opensandbox-provider-types.js';

const PROVIDER_NAME = 'opensandbox';

/**
 * OpenSandbox sandboxes, one per (user, thread), kept warm between turns.
 *
 * - Identity: the sbx id of (user, thread) is `deriveSandboxScopeToken` (16 hex characters), the
 *   remote's own id is the server's. There is no cross-process discovery: the warm pool and the
 *   replica cap are per process.
 * - Acquire and release of one id run one at a time (`AcquireSerializer`, keyed by the id), so
 *   concurrent acquires of a thread create one remote. Thread-less acquires get a random id and
 *   never wait on that lock.
 * - Acquire: an active sandbox is renewed and handed out again (a renewal that finds the remote gone
 *   rebuilds it in the same acquire; any other renewal failure is thrown and the sandbox kept); a
 *   warm one is reclaimed after a `true` health check (10 s), or deleted and replaced; otherwise a
 *   remote is created with its own connection configuration and prepared with the user-data
 *   directories (a remote that cannot be prepared is deleted).
 * - Release parks the sandbox in the shared `WarmPool`; `replicas` is a soft cap (warm sandboxes
 *   are evicted oldest first, active ones never), `idle_timeout` deletes long-parked ones.
 * - `reset()` is `shutdown()` (nothing finds a remote again), which stops the idle checker and
 *   deletes every remote exactly once. Idempotent.
 * - `listSandboxes()` (`sbx ls`) shows the server's sandboxes carrying this provider's tag; there is
 *   no `reapOrphans()`: no ownership store says whether another process still uses a remote.
 *
 * One concept, the lifecycle of this provider's remotes (acquire, release, eviction, teardown),
 * whose paths share the registry, the locks and the shutdown re-checks; the listing
 * (`opensandbox-listing.ts`), the SDK loading (`opensandbox-sdk.ts`), the create options and the
 * types live in the files named for them.
 */
export class OpenSandboxProvider
  extends RegistrySandboxProvider<ActiveSandbox, WarmOpenSandbox>
  implements SandboxListingProvider
{
  readonly settings: OpenSandboxSettings;
  readonly #options: OpenSandboxProviderOptions;
  /** Deletes of evicted sandboxes still running; shutdown waits for them. */
  readonly #evictions = new Set<Promise<void>>();
  /** Acquires in flight; shutdown waits for them (each deletes what it made once it sees the shutdown). */
  readonly #acquisitions = new Set<Promise<unknown>>();
  /** The SDK, loaded on the first acquire or listing (a failed load is tried again). */
  readonly #loadSdk: () => Promise<OpenSandboxSdk>;

  constructor(options: OpenSandboxProviderOptions = {}) {
    const settings = resolveOpenSandboxSettings(options.config);
    const logger = options.logger ?? requiredLogger;
    super({
      name: PROVIDER_NAME,
      poolName: `${PROVIDER_NAME}-idle-reaper`,
      settings,
      closedMessage: PROVIDER_SHUT_DOWN_MESSAGE,
      clock: options.clock,
      logger,
      background: options.background,
    });
    this.#options = options;
    this.settings = settings;
    this.#loadSdk = sdkLoader(options.sdk, options.importer);
    for (const warning of connectionWarnings(this.settings, options.env ?? process.env)) {
      this.logger.warn(warning);
    }
  }

  protected sandboxOf(active: ActiveSandbox): OpenSandboxSandbox {
    return active.sandbox;
  }

  /** Nothing finds an OpenSandbox remote again in another instance: `reset()` deletes them. */
  protected readonly handsOverOnReset = false;

  protected handOver(): Promise<void> {
    return Promise.resolve();
  }

  protected handOverWarm(): Promise<void> {
    return Promise.resolve();
  }

  /** The sbx sandbox id of (user, thread): `deriveSandboxScopeToken` of @sbx/core. */
  sandboxIdFor(userId: string | undefined, threadId: string): string {
    return deriveSandboxScopeToken({ userId: resolveEffectiveUserId(userId), threadId });
  }

  override acquire(options: AcquireOptions = {}): Promise<string> {
    const acquisition = this.#acquire(options);
    this.#acquisitions.add(acquisition);
    const forget = (): void => {
      this.#acquisitions.delete(acquisition);
    };
    acquisition.then(forget, forget);
    return acquisition;
  }

  async #acquire(options: AcquireOptions): Promise<string> {
    this.admit(options);
    this.assertOpen();
    throwIfAborted(options.signal);
    const sdk = await this.#loadSdk();
    this.assertOpen();
    if (options.threadId === undefined) {
      const id = randomUUID().slice(0, 8);
      return this.acquired(await this.#create(sdk, id, undefined), 'create');
    }
    const spec = checkSandboxSpec(
      options.spec,
      this.specSupport,
      this.specPolicy,
      'OpenSandboxProvider',
    );
    const identity: OpenSandboxIdentity = {
      userId: resolveEffectiveUserId(options.userId),
      threadId: options.threadId,
      ...(spec?.labels ? { labels: spec.labels } : {}),
      ...(spec ? { spec } : {}),
    };
    const scope = specIdentityScope(spec);
    const id = deriveSandboxScopeToken({
      userId: identity.userId,
      threadId: identity.threadId,
      ...(scope ? { scope } : {}),
    });
    return this.locks.hold(id, () => this.#acquireThread(sdk, id, identity, options.signal), {
      signal: options.signal,
    });
  }

  /**
   * An image and resource limits (CPU, memory: `resourceLimits`) per sandbox, part of its id;
   * labels become sandbox metadata. The timeout is the sandbox's lifetime, renewed on every use,
   * so a per-acquire one is refused rather than overwritten.
   */
  override get specSupport(): SandboxSpecSupport {
    return { image: true, resources: ['memoryMb', 'cpus'], timeout: false, labels: true };
  }

  protected override get specPolicy(): SandboxSpecPolicy {
    return this.#options.config?.specPolicy ?? DEFAULT_SPEC_POLICY;
  }

  /** A pure in-memory lookup of an active sandbox. */
  override get(sandboxId: string): OpenSandboxSandbox | undefined {
    return this.registry.active.get(sandboxId)?.sandbox;
  }

  override async release(sandboxId: string): Promise<void> {
    const active = this.registry.active.get(sandboxId);
    if (active === undefined) return;
    if (this.closed) {
      this.registry.active.delete(sandboxId);
      await this.#destroyQuietly(active.sandbox, 'shutdown');
      return;
    }
    await this.locks.hold(sandboxId, async () => this.#park(sandboxId));
  }

  /** The server's sandboxes of this provider (see `listOpenSandboxes`); reads only. */
  async listSandboxes(options: ListSandboxesOptions = {}): Promise<SandboxSummary[]> {
    const { signal } = options;
    this.assertOpen();
    throwIfAborted(signal);
    const sdk = await this.#loadSdk();
    throwIfAborted(signal);
    return listOpenSandboxes(sdk, {
      settings: this.settings,
      registry: this.registry,
      logger: this.logger,
      signal,
    });
  }

  // -------------------------------------------------------------------------------------------
  // acquire

  async #acquireThread(
    sdk: OpenSandboxSdk,
    id: string,
    identity: OpenSandboxIdentity,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    // No closed check here: shutdown closes the locks (a queued section never starts), and each
    // path below re-checks after its round trip, where shutdown may really have begun.
    const active = this.registry.active.get(id);
    if (active !== undefined) {
      assertSameThreadIdentity(id, active.identity, identity, UNKNOWN_IDENTITY);
      if (await this.#renewActive(active)) {
        // Shutdown may have begun during the renewal; its teardown deletes every active sandbox.
        if (this.closed) throw new ProviderClosedError(PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE);
        return this.acquired(id, 'reuse');
      }
    }
    if (await this.#reclaimWarm(id, identity)) return this.acquired(id, 'reclaim');
    throwIfAborted(signal);
    return this.acquired(await this.#create(sdk, id, identity), 'create');
  }

  /**
   * True when the active sandbox may be handed out again. A renewal that found the remote gone
   * has closed the adapter (and evicted it): the caller then rebuilds. Any other failure is the
   * caller's, and the sandbox stays registered.
   */
  async #renewActive(active: ActiveSandbox): Promise<boolean> {
    if (!active.sandbox.closed) {
      try {
        await active.sandbox.renewLifetime();
        return true;
      } catch (error) {
        if (!active.sandbox.closed || this.closed) throw error;
        this.logger.info('Active OpenSandbox sandbox is gone; creating a new one', {
          sandboxId: active.sandbox.id,
          remoteId: active.sandbox.remoteId,
        });
      }
    }
    this.#evict(active.sandbox);
    return false;
  }

  async #reclaimWarm(id: string, identity: OpenSandboxIdentity): Promise<boolean> {
    const entry = this.registry.pool.get(id);
    if (entry === undefined) return false;
    assertSameThreadIdentity(id, entry.value.identity, identity, UNKNOWN_IDENTITY);
    // Out of the pool before the (slow) check, so the idle checker cannot delete it under us;
    // refused while a teardown holds it, in which case it is as good as gone.
    const taken = this.registry.pool.take(id, entry);
    if (taken === undefined) return false;
    const { sandbox } = taken.value;
    if (await sandbox.healthCheck(HEALTH_CHECK_TIMEOUT_SECONDS)) {
      if (this.closed) {
        await this.#destroyQuietly(sandbox, 'shutdown');
        throw new ProviderClosedError(PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE);
      }
      this.registry.active.set(id, { sandbox, identity });
      this.logger.debug('Reclaimed a warm OpenSandbox sandbox', {
        sandboxId: id,
        remoteId: sandbox.remoteId,
      });
      return true;
    }
    this.logger.warn('Warm OpenSandbox sandbox failed its health check; replacing it', {
      sandboxId: id,
      remoteId: sandbox.remoteId,
    });
    await this.#destroyQuietly(sandbox, 'health_check_failed');
    return false;
  }

  async #create(
    sdk: OpenSandboxSdk,
    id: string,
    identity: OpenSandboxIdentity | undefined,
  ): Promise<string> {
    const sandbox = await this.registry.withCreationSlot(id, async () => {
      const created = await this.#createRemote(sdk, id, identity);
      await this.#bootstrap(created);
      return created;
    });
    if (this.closed) {
      await this.#destroyQuietly(sandbox, 'shutdown');
      throw new ProviderClosedError(PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE);
    }
    // Nothing else registered this id meanwhile: a thread's creates run under its lock, reset()
    // and shutdown() close the locks (a create that outlives them is deleted just above), and
    // thread-less ids are random.
    this.registry.active.set(id, { sandbox, identity });
    this.logger.info('Created OpenSandbox sandbox', { sandboxId: id, remoteId: sandbox.remoteId });
    return id;
  }

  async #createRemote(
    sdk: OpenSandboxSdk,
    id: string,
    identity: OpenSandboxIdentity | undefined,
  ): Promise<OpenSandboxSandbox> {
    const s = this.settings;
    const connectionConfig = connectionConfigFor(sdk, this.settings);
    const { options: createOptions, environment } = remoteCreateOptions(s, identity);
    const remote = await sdk.Sandbox.create({ ...createOptions, connectionConfig });
    return new OpenSandboxSandbox(id, {
      remote,
      environment,
      lifetimeSeconds: s.lifetimeSeconds,
      commandTimeoutSeconds: s.commandTimeoutSeconds,
      ...(this.#options.maxDownloadBytes === undefined
        ? {}
        : { maxDownloadBytes: this.#options.maxDownloadBytes }),
      onTerminalFailure: (failed) => this.#evict(failed),
      clock: this.clock,
      logger: this.logger,
    });
  }

  /** Creates the user-data directories; a remote that cannot be prepared is deleted, not used. */
  async #bootstrap(sandbox: OpenSandboxSandbox): Promise<void> {
    const command = `mkdir -p ${BOOTSTRAP_DIRECTORIES.map(shellQuote).join(' ')}`;
    let failure: unknown;
    let detail: string;
    try {
      const result = await sandbox.probe(command, BOOTSTRAP_TIMEOUT_SECONDS);
      if (result.exitCode === 0) return;
      detail = result.detail;
    } catch (error) {
      failure = error;
      detail = describeRemoteError(error);
    }
    await this.#destroyQuietly(sandbox, 'bootstrap_failed');
    throw new SandboxRuntimeError(`OpenSandbox bootstrap failed: ${detail}`, {
      details: { sandbox_id: sandbox.id, remote_id: sandbox.remoteId },
      ...(failure === undefined ? {} : { cause: failure }),
    });
  }

  // -------------------------------------------------------------------------------------------
  // release, eviction, teardown

  async #park(id: string): Promise<void> {
    const active = this.registry.active.get(id);
    if (active === undefined) return;
    this.registry.active.delete(id);
    // Nobody can ever reclaim a thread-less (random) id: parking it would only hold a replica slot
    // until it idles out, so it is deleted at once.
    if (active.sandbox.closed || active.identity === undefined) {
      await this.#destroyQuietly(active.sandbox, 'release');
      return;
    }
    const parked = this.registry.pool.put(id, {
      sandbox: active.sandbox,
      identity: active.identity,
    });
    if (parked === undefined) await this.#destroyQuietly(active.sandbox, 'release');
  }

  /**
   * Drops a sandbox whose remote is gone from the active registry (only if it is still this exact
   * adapter: a replacement may be registered by now) and deletes it once.
   */
  #evict(sandbox: OpenSandboxSandbox): void {
    if (this.registry.active.get(sandbox.id)?.sandbox === sandbox)
      this.registry.active.delete(sandbox.id);
    const deletion = this.#destroyQuietly(sandbox, 'evicted');
    this.#evictions.add(deletion);
    void deletion.finally(() => this.#evictions.delete(deletion));
  }

  protected async destroyWarm(
    entry: WarmEntry<WarmOpenSandbox>,
    reason: WarmPoolDestroyReason,
  ): Promise<boolean> {
    this.logger.info('Deleting warm OpenSandbox sandbox', {
      sandboxId: entry.id,
      remoteId: entry.value.sandbox.remoteId,
      reason,
    });
    // A failure propagates: the pool keeps the entry and retries on a later pass.
    await entry.value.sandbox.destroy();
    return true;
  }

  /** Deletes a remote; a failure is logged (the remote may leak), never thrown. */
  async #destroyQuietly(sandbox: OpenSandboxSandbox, reason: string): Promise<void> {
    try {
      await sandbox.destroy();
    } catch (error) {
      this.logger.error('Failed to delete OpenSandbox sandbox', {
        sandboxId: sandbox.id,
        remoteId: sandbox.remoteId,
        reason,
        error: describeRemoteError(error),
      });
    }
  }

  protected async teardownAll(): Promise<void> {
    // An acquire in flight finishes, sees the shutdown and deletes what it created or reclaimed;
    // waiting for it means no remote of this provider outlives a completed shutdown.
    await Promise.allSettled([...this.#acquisitions]);
    await this.registry.pool.destroyAll();
    const actives = [...this.registry.active.values()];
    this.registry.active.clear();
    await Promise.all(actives.map((a) => this.#destroyQuietly(a.sandbox, 'shutdown')));
    await Promise.all([...this.#evictions]);
    for (const id of this.registry.pool.ids()) {
      this.logger.error('Warm OpenSandbox sandbox could not be deleted at shutdown', {
        sandboxId: id,
      });
    }
  }
}

/** `use: "@sbx/opensandbox"` with a factory: builds the provider from `{ config, logger }`. */
export function createOpenSandboxProvider(
  init: OpenSandboxProviderOptions = {},
): OpenSandboxProvider {
  return new OpenSandboxProvider(init);
}
