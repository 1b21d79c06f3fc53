import { randomBytes } from 'node:crypto';
import type { SandboxCapacityExceededError } from '@sbx/core';
import { SandboxBeingDestroyedError, SandboxRuntimeError } from '@sbx/core';
import { DEFAULT_SKILLS_ROOT } from '@sbx/core/internal';
import { runBootstrap } from './bootstrap.js';
import type { E2BRemoteSandbox, E2BSandboxInfo } from './e2b-client.js';
import { errorMessage, isSandboxGoneError } from './e2b-errors.js';
import type { E2BSandbox } from './e2b-sandbox.js';
import type { Slot } from './local-slots.js';
import {
  E2B_PROVIDER_TAG_VALUE,
  E2B_TAGS,
  belongsToLedger,
  buildVmMetadata,
  compareCandidates,
  skillsRootOf,
} from './metadata.js';
import { listRemoteInventory } from './remote-inventory.js';
import { SHUTDOWN_RETRY_AFTER_SECONDS, threadKeyText } from './e2b-thread-key.js';
import type { ThreadKey } from './e2b-thread-key.js';
import type { E2BCapacity } from './e2b-capacity.js';
import type { E2BTeardown } from './e2b-teardown.js';
import type { E2BUploads } from './e2b-uploads.js';
import type { OwnershipClient } from '@sbx/core/provider-kit';
import type { E2BProviderContext, Stores } from './e2b-provider-context.js';

/**
 * The acquire state machine for one thread (under its serializer lock) or a thread-less VM:
 * reuse the active VM, reclaim the warm one, adopt one found by its tags, create one. Every check
 * taken before an await point is taken again after it; a VM is handed out only once its lease is
 * published and its bootstrap passed.
 */
export class E2BAcquirePaths {
  readonly #ctx: E2BProviderContext;
  readonly #teardown: E2BTeardown;
  readonly #capacity: E2BCapacity;
  readonly #uploads: E2BUploads;

  constructor(
    ctx: E2BProviderContext,
    teardown: E2BTeardown,
    capacity: E2BCapacity,
    uploads: E2BUploads,
  ) {
    this.#ctx = ctx;
    this.#teardown = teardown;
    this.#capacity = capacity;
    this.#uploads = uploads;
  }

  async #own(): Promise<OwnershipClient> {
    return (await this.#ctx.stores()).ownership;
  }

  async reuse(key: ThreadKey): Promise<string | undefined> {
    const book = this.#ctx.book;
    const id = book.threadSandbox(threadKeyText(key));
    if (id === undefined) return undefined;
    const entry = book.active(id);
    if (entry === undefined) {
      book.unmapThread(threadKeyText(key));
      return undefined;
    }
    if (entry.sandbox.isDead || !(await entry.sandbox.ping())) {
      this.#ctx.logger.info('Dropping a dead e2b sandbox before reuse', { sandboxId: id });
      await this.#teardown.dropActive(id, entry);
      return undefined;
    }
    await this.#teardown.pushTimeout(entry.sandbox.client);
    if (!(await (await this.#own()).publish(id))) {
      await this.#teardown.dropActive(id, entry);
      return undefined;
    }
    // Retaken after the round trips: renewal may have forgotten the entry meanwhile.
    return book.active(id) === entry ? id : undefined;
  }

  async reclaim(key: ThreadKey): Promise<string | undefined> {
    const seed = this.#ctx.seedOf(key);
    const entry = this.#ctx.book.pool.entries().find((e) => e.value.seed === seed);
    if (entry === undefined || this.#ctx.book.pool.take(entry.id, entry) === undefined)
      return undefined;
    const id = entry.id;
    const slot = this.#ctx.slots.beginTransition();
    this.#ctx.ownedRemoteOps.add(id);
    let remote: E2BRemoteSandbox;
    try {
      remote = await this.#ctx.sdk(() => this.#ctx.client.connect(id, this.#ctx.connectOptions()));
    } catch (error) {
      this.#ctx.ownedRemoteOps.delete(id);
      if (isSandboxGoneError(error)) {
        slot.release();
        await this.#teardown.forgetRemote(id);
        return undefined;
      }
      this.#ctx.logger.warn('Reconnecting a warm e2b sandbox failed; keeping a tombstone', {
        sandboxId: id,
        error: errorMessage(error),
      });
      slot.tombstone(id);
      return undefined;
    }
    const sandbox = this.#ctx.adapter(id, remote);
    if (!(await sandbox.ping())) {
      await sandbox.close();
      this.#ctx.ownedRemoteOps.delete(id);
      slot.release();
      await this.#teardown.forgetRemote(id);
      return undefined;
    }
    try {
      if (!(await (await this.#own()).publish(id))) {
        await sandbox.close();
        this.#ctx.ownedRemoteOps.delete(id);
        slot.release();
        return undefined;
      }
    } catch (error) {
      await sandbox.close();
      this.#ctx.ownedRemoteOps.delete(id);
      slot.tombstone(id);
      throw error;
    }
    await this.#teardown.pushTimeout(remote);
    const failure = await runBootstrap(remote, this.#ctx.settings.homeDir);
    if (failure !== undefined) {
      this.#ctx.logger.warn('Warm e2b sandbox failed bootstrap; discarding it', {
        sandboxId: id,
        error: failure.message,
      });
      await this.#teardown.discardVm(id, sandbox, slot);
      return undefined;
    }
    if (this.#ctx.isShuttingDown()) {
      await this.#teardown.killAndClose(id, sandbox);
      this.#ctx.ownedRemoteOps.delete(id);
      return undefined;
    }
    this.#teardown.register(id, sandbox, key, seed);
    this.#ctx.ownedRemoteOps.delete(id);
    slot.commit();
    return id;
  }

  async discover(key: ThreadKey): Promise<string | undefined> {
    const stores = await this.#ctx.stores();
    const wanted: Record<string, string> = {
      [E2B_TAGS.provider]: E2B_PROVIDER_TAG_VALUE,
      [E2B_TAGS.user]: key.userId,
      [E2B_TAGS.thread]: key.threadId,
      ...(key.spec ? { [E2B_TAGS.spec]: key.spec } : {}),
    };
    const inventory = await listRemoteInventory(
      this.#ctx.client,
      { query: { metadata: wanted } },
      {
        maxPages: this.#ctx.settings.reconciliation.maxPages,
        maxItems: this.#ctx.settings.reconciliation.maxItems,
        deadlineMs: this.#ctx.clock.now() + this.#ctx.settings.reconciliation.maxSeconds * 1000,
      },
      this.#ctx.clock,
      this.#ctx.logger,
    );
    const candidates = inventory.entries
      .filter(
        (info) =>
          Object.entries(wanted).every(([k, v]) => info.metadata[k] === v) &&
          // A VM made to another spec (or to one, when this acquire has none) is not this one.
          (info.metadata[E2B_TAGS.spec] || undefined) === key.spec &&
          belongsToLedger(info, stores.ledgerKey) &&
          skillsRootOf(info, DEFAULT_SKILLS_ROOT) === this.#ctx.settings.skillsRoot &&
          // Anything tracked here, in flight included: a VM reconciliation is still bootstrapping
          // is not free to adopt. Adopting it made reconciliation see "the thread got a sandbox
          // meanwhile" and release the lease of the VM just handed out.
          !this.#ctx.isTrackedLocally(info.sandboxId),
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
    this.#teardown.rememberTimeout(info);
    let remote: E2BRemoteSandbox;
    try {
      remote = await this.#ctx.sdk(() => this.#ctx.client.connect(id, this.#ctx.connectOptions()));
    } catch (error) {
      if (isSandboxGoneError(error)) await this.#teardown.ledgerRelease(id);
      this.#ctx.logger.info('Skipping an e2b discovery candidate that cannot be connected', {
        sandboxId: id,
        error: errorMessage(error),
      });
      return undefined;
    }
    const sandbox = this.#ctx.adapter(id, remote);
    if (!(await sandbox.ping())) {
      await sandbox.close();
      await this.#teardown.ledgerRelease(id);
      return undefined;
    }
    if (stores.capacity !== undefined) {
      try {
        await stores.capacity.track(id, info.metadata[E2B_TAGS.capacityReservation] || undefined);
      } catch (error) {
        await sandbox.close();
        throw this.#capacity.capacityError(
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
      slot = await this.#capacity.reserveLocal(this.#capacity.deadline());
    } catch (error) {
      // The VM stays as it is: it may be a peer's, and it is still this thread's sandbox later.
      const reason = (error as SandboxCapacityExceededError).reason;
      this.#ctx.logger.warn(
        reason === 'shutdown'
          ? 'Provider is shutting down; not adopting a discovered e2b sandbox'
          : 'Sandbox capacity is full; not adopting a discovered e2b sandbox',
        { sandboxId: id },
      );
      await sandbox.close();
      throw error;
    }
    // A reaper of this instance may have started on the VM during the awaits above: its `del:`
    // claim may still be in flight, and its claim over our own `own:` would be granted, so a take
    // landing first would hand out a VM that is killed next. Checked in the same synchronous
    // step that marks the VM in flight, which the reaper checks in turn (`reapKill`).
    if (this.#ctx.reaping.has(id)) {
      slot.release();
      await sandbox.close();
      return undefined;
    }
    this.#ctx.unownedRemoteOps.add(id);
    const giveUp = async (): Promise<void> => {
      this.#ctx.unownedRemoteOps.delete(id);
      slot.release();
      await sandbox.close();
    };
    let took: boolean;
    try {
      took = await (await this.#own()).publish(id);
    } catch (error) {
      await giveUp();
      throw error;
    }
    if (!took) {
      await giveUp();
      throw new SandboxBeingDestroyedError(id);
    }
    await this.#teardown.pushTimeout(remote);
    const failure = await runBootstrap(remote, this.#ctx.settings.homeDir);
    if (failure !== undefined) {
      this.#ctx.logger.warn('Discovered e2b sandbox failed bootstrap; discarding it', {
        sandboxId: id,
        error: failure.message,
      });
      await this.#teardown.discardVm(id, sandbox, slot, this.#ctx.unownedRemoteOps);
      return undefined;
    }
    if (this.#ctx.isShuttingDown()) {
      await this.#teardown.killAndClose(id, sandbox);
      this.#ctx.unownedRemoteOps.delete(id);
      return undefined;
    }
    this.#teardown.register(id, sandbox, key, this.#ctx.seedOf(key));
    this.#ctx.unownedRemoteOps.delete(id);
    slot.commit();
    return id;
  }

  async create(
    key: ThreadKey | undefined,
    uploadShared: boolean,
    labels?: Readonly<Record<string, string>>,
  ): Promise<string> {
    const stores = await this.#ctx.stores();
    const { slot, token } = await this.#capacity.reserveCapacity(stores);
    // An acquire's labels go under sbx's own tags, which find and own the VM.
    const metadata = buildVmMetadata({
      ownerId: stores.ownership.ownerId,
      nowMs: this.#ctx.clock.now(),
      userId: key?.userId,
      threadId: key?.threadId,
      ledgerKey: stores.ledgerKey,
      reservationToken: token,
      skillsRoot: this.#ctx.settings.skillsRoot,
      defaultSkillsRoot: DEFAULT_SKILLS_ROOT,
      ...(labels ? { labels } : {}),
      ...(key?.spec ? { spec: key.spec } : {}),
      ...(key?.timeoutSeconds !== undefined ? { timeoutSeconds: key.timeoutSeconds } : {}),
    });
    const idleSeconds = key?.timeoutSeconds ?? this.#ctx.settings.idleTimeoutSeconds;
    let remote: E2BRemoteSandbox;
    try {
      remote = await this.#ctx.sdk(() =>
        this.#ctx.client.create({
          template: key?.template ?? this.#ctx.settings.template,
          metadata,
          ...(idleSeconds > 0 ? { timeoutMs: idleSeconds * 1000 } : {}),
          ...(Object.keys(this.#ctx.settings.environment).length > 0
            ? { envs: { ...this.#ctx.settings.environment } }
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
    if (key?.timeoutSeconds !== undefined) this.#ctx.vmTimeouts.set(id, key.timeoutSeconds);
    this.#ctx.ownedRemoteOps.add(id);
    if (stores.capacity !== undefined) {
      try {
        await stores.capacity.track(id, token);
      } catch (error) {
        this.#ctx.logger.warn('Tracking a new e2b sandbox in the capacity ledger failed', {
          sandboxId: id,
          error: errorMessage(error),
        });
      }
    }
    const sandbox = this.#ctx.adapter(id, remote);
    if (this.#ctx.isShuttingDown()) await this.#abandonCreateAfterShutdown(id, sandbox);
    let took: boolean;
    try {
      took = await (await this.#own()).publish(id);
    } catch (error) {
      await this.#teardown.discardVm(id, sandbox, slot);
      throw error;
    }
    if (!took) {
      await this.#teardown.discardVm(id, sandbox, slot);
      throw new SandboxBeingDestroyedError(id);
    }
    const failure = await runBootstrap(remote, this.#ctx.settings.homeDir);
    if (failure !== undefined) {
      await this.#teardown.discardVm(id, sandbox, slot);
      throw new SandboxRuntimeError(`Failed to bootstrap e2b sandbox ${id}: ${failure.message}`, {
        cause: failure,
      });
    }
    await this.#uploads.oneShotUploads(remote, key, uploadShared);
    if (this.#ctx.isShuttingDown()) {
      await this.#teardown.killAndClose(id, sandbox);
      this.#ctx.ownedRemoteOps.delete(id);
      throw this.#capacity.capacityError(
        'Sandbox provider shut down while creating a sandbox; it was cleaned up',
        'shutdown',
        { retryAfterSeconds: SHUTDOWN_RETRY_AFTER_SECONDS },
      );
    }
    this.#teardown.register(
      id,
      sandbox,
      key,
      key === undefined ? undefined : this.#ctx.seedOf(key),
    );
    this.#ctx.ownedRemoteOps.delete(id);
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
      this.#ctx.logger.warn('Killing a sandbox created during shutdown failed; retrying once', {
        sandboxId: id,
        error: errorMessage(error),
      });
      try {
        const retry = await this.#ctx.client.connect(id);
        try {
          await retry.kill();
          confirmed = true;
        } finally {
          await retry.close().catch(() => undefined);
        }
      } catch (retryError) {
        this.#ctx.logger.error('Could not confirm cleanup of a sandbox created during shutdown', {
          sandboxId: id,
          error: errorMessage(retryError),
        });
      }
    }
    await sandbox.close();
    if (confirmed) {
      this.#ctx.ownedRemoteOps.delete(id);
      await this.#teardown.ledgerRelease(id);
    }
    throw this.#capacity.capacityError(
      confirmed
        ? 'Sandbox provider shut down while creating a sandbox; it was cleaned up'
        : `Sandbox provider shut down while creating a sandbox; could not confirm cleanup of ${id}`,
      'shutdown',
      { retryAfterSeconds: SHUTDOWN_RETRY_AFTER_SECONDS },
    );
  }
}
