import { randomUUID } from 'node:crypto';
import {
  parseNetworkPolicy,
  SandboxBeingDestroyedError,
  SandboxRuntimeError,
  errorMessage,
  isSbxError,
} from '@sbx/core';
import type { AcquirePath, NetworkPolicy, Sandbox } from '@sbx/core';
import { checkIdentity, checkWarmIdentity, identityKey } from './aio-identity.js';
import type { AioThreadIdentity } from './aio-identity.js';
import { renewLease } from './aio-lease-renewal.js';
import type { AioPauses } from './aio-pauses.js';
import type { AioProviderContext } from './aio-provider-context.js';
import type { AioTeardown } from './aio-teardown.js';
import type { SandboxInfo } from './sandbox-info.js';
import { planSandboxMounts, prepareSandboxMounts } from './sandbox-mounts.js';

function isBeingDestroyed(err: unknown): err is SandboxBeingDestroyedError {
  return isSbxError(err) && err.code === SandboxBeingDestroyedError.CODE;
}

/**
 * The acquire state machine of `docs/architecture.md`, for one thread (under its serializer
 * lock) or an anonymous sandbox: (a) reuse the active one, (b) reclaim the warm one, (c) adopt a
 * running container found by id, (e) create one. Every check taken before an await point (a store
 * round trip, a health check, the readiness wait) is taken again after it.
 */
export class AioAcquirePaths {
  readonly #ctx: AioProviderContext;
  readonly #teardown: AioTeardown;
  readonly #sandboxIdFor: (identity: AioThreadIdentity) => string;
  readonly #pauses: AioPauses;

  /** `sandbox.network`: the policy of a sandbox whose acquire names none (anonymous ones too). */
  readonly #configuredNetwork: NetworkPolicy | undefined;

  constructor(
    ctx: AioProviderContext,
    teardown: AioTeardown,
    sandboxIdFor: (identity: AioThreadIdentity) => string,
    pauses: AioPauses,
    configuredNetwork: NetworkPolicy | undefined,
  ) {
    this.#ctx = ctx;
    this.#teardown = teardown;
    this.#sandboxIdFor = sandboxIdFor;
    this.#pauses = pauses;
    this.#configuredNetwork = configuredNetwork;
  }

  async acquireAnonymous(): Promise<string> {
    const id = randomUUID().slice(0, 8);
    await this.#create(id, undefined);
    return this.#acquired(id, 'create');
  }

  async acquireThread(identity: AioThreadIdentity): Promise<string> {
    const key = identityKey(identity);
    const reused = await this.#reuse(key);
    if (reused !== undefined) return this.#acquired(reused, 'reuse');

    const id = this.#sandboxIdFor(identity);
    checkIdentity(this.#ctx.book, id, identity);
    const reclaimed = await this.#reclaim(key, id, identity);
    if (reclaimed !== undefined) return this.#acquired(reclaimed, 'reclaim');

    const found = await this.#discover(id);
    if (found !== null) {
      await this.#registerDiscovered(key, identity, found);
      return this.#acquired(id, 'discover');
    }
    await this.#create(id, identity);
    return this.#acquired(id, 'create');
  }

  #acquired(sandboxId: string, path: AcquirePath): string {
    this.#ctx.events.emit({ type: 'acquire', sandboxId, path });
    return sandboxId;
  }

  /**
   * Acquire-path ownership: take the lease (from anyone but a teardown); a teardown's marker is
   * `SandboxBeingDestroyedError`. The intent mark and the epoch are the ownership client's.
   */
  async #publish(id: string): Promise<void> {
    if (!(await this.#ctx.ownership().publish(id))) throw new SandboxBeingDestroyedError(id);
  }

  /** A teardown marker on a publish: another instance is stopping it, so start afresh. */
  #startAfresh(id: string, err: unknown): undefined {
    if (!isBeingDestroyed(err)) throw err;
    this.#ctx.logger.info(`Sandbox ${id} is being destroyed by another instance; starting afresh`);
    this.#teardown.forgetLost(id);
    return undefined;
  }

  /** (a) The thread's active sandbox, if alive and still ours after re-publishing ownership. */
  async #reuse(key: string): Promise<string | undefined> {
    const { book } = this.#ctx;
    const id = book.threadSandbox(key);
    if (id === undefined) return undefined;
    // Early-out: no health check or store call for an id whose teardown is under way.
    if (book.pool.isReserved(id)) return undefined;
    // A thread mapping always names an active entry (the book sets and drops both together).
    const entry = book.active(id);
    if (entry === undefined) return undefined;
    const health = await this.#ctx.checkHealth(entry.info);
    if (health === 'dead') {
      await this.#teardown.dropUnhealthy(id, 'its container is gone or stopped', entry.info);
      return undefined;
    }
    // Forgotten during the health check (a renewal heard LOST): no take of an id no longer tracked
    // here, which would leave a lease nothing renews and cut the peer's turn if the acquire fails.
    if (book.threadSandbox(key) !== id || !book.isActive(id)) {
      book.unmapThread(key, id);
      return undefined;
    }
    book.touch(id);
    try {
      await this.#publish(id);
    } catch (err) {
      return this.#startAfresh(id, err);
    }
    // Owned again, so ours to resume: a paused sandbox is handed out running.
    await this.#pauses.resumeForAcquire(id, entry.info, false);
    // Re-taken after the round trips: a reaper may have reserved the id, or a renewal that saw
    // LOST before our intent mark may have forgotten it. Either way, fall through.
    if (book.pool.isReserved(id) || !book.isActive(id)) return undefined;
    return id;
  }

  /** (b) The thread's warm sandbox, if alive and still ours after publishing ownership. */
  async #reclaim(
    key: string,
    id: string,
    identity: AioThreadIdentity,
  ): Promise<string | undefined> {
    const { book } = this.#ctx;
    const warm = book.pool.get(id);
    // Its identity was checked in the same synchronous block (acquireThread's checkIdentity).
    if (warm === undefined || book.pool.isReserved(id)) return undefined;
    // A container adopted without a published port cannot be reached; discovery may find one.
    if (!warm.value.info.sandboxUrl) return undefined;
    const health = await this.#ctx.checkHealth(warm.value.info);
    if (health === 'dead') {
      await this.#teardown.dropUnhealthy(id, 'its container is gone or stopped', warm.value.info);
      return undefined;
    }
    try {
      await this.#publish(id);
    } catch (err) {
      return this.#startAfresh(id, err);
    }
    await this.#pauses.resumeForAcquire(id, warm.value.info, false);
    if (book.pool.isReserved(id)) return undefined;
    const current = book.pool.get(id);
    if (current === undefined) return undefined;
    // Not redundant: during the awaits the entry may have been forgotten and the id parked again
    // by another tenant's turn (a hash collision), which only this check refuses.
    checkWarmIdentity(id, current, identity);
    // Same synchronous block as the checks above; installing drops the warm entry.
    const { info } = current.value;
    this.#install(id, this.#ctx.createClient(info), info, identity, key);
    return id;
  }

  async #discover(id: string): Promise<SandboxInfo | null> {
    try {
      return await this.#ctx.backend.discover(id);
    } catch (err) {
      // Unverifiable is not adoptable: fall through to create.
      this.#ctx.logger.warn(`Could not discover sandbox ${id}; creating instead`, {
        error: errorMessage(err),
      });
      return null;
    }
  }

  /** (c) A running sandbox this process did not track (a peer's, or a previous run's). */
  async #registerDiscovered(key: string, identity: AioThreadIdentity, info: SandboxInfo) {
    const { book } = this.#ctx;
    const id = info.sandboxId;
    // Creating instead would collide with the container name that is still there.
    if (book.pool.isReserved(id)) throw new SandboxBeingDestroyedError(id);
    checkIdentity(book, id, identity);
    const client = this.#ctx.createClient(info);
    try {
      await this.#publish(id);
      // Paused by another instance (or an earlier run): resumed now that it is ours.
      await this.#pauses.resumeForAcquire(id, info, true);
      if (book.pool.isReserved(id)) throw new SandboxBeingDestroyedError(id);
      checkIdentity(book, id, identity);
      this.#install(id, client, info, identity, key);
    } catch (err) {
      // The container is not ours to stop.
      await this.#ctx.closeClient(client, id, 'discover');
      throw err;
    }
  }

  /** (e) A new sandbox, ready and owned, or nothing at all. */
  async #create(id: string, identity: AioThreadIdentity | undefined): Promise<void> {
    const { settings, book } = this.#ctx;
    const mounts =
      identity === undefined
        ? []
        : await prepareSandboxMounts(
            planSandboxMounts({
              userId: identity.userId,
              threadId: identity.threadId,
              skillsRoot: settings.skillsRoot,
              explicitSkillPolicy: identity.explicitSkillPolicy,
              baseDir: settings.baseDir,
              hostBaseDir: settings.hostBaseDir,
            }),
            this.#ctx.logger,
          );
    await book.pool.ensureCapacity(book.activeCount, id);
    // Inside the readiness wait the container is listed, untracked and unowned, which is exactly
    // what reconciliation and the orphan reaper take; the creating mark keeps them off it, or a
    // create at the cap would evict it as a warm entry. The register's publish window after it is
    // covered by the register's own re-checks.
    const endCreating = book.beginCreating(id);
    let info: SandboxInfo;
    try {
      info = await this.#createReady(id, identity, mounts);
    } finally {
      endCreating();
    }
    await this.#registerCreated(info, identity);
  }

  /** The backend's create and the readiness wait (an unready container is torn down). */
  async #createReady(
    id: string,
    identity: AioThreadIdentity | undefined,
    mounts: Awaited<ReturnType<typeof prepareSandboxMounts>>,
  ): Promise<SandboxInfo> {
    const spec = identity?.spec;
    // A spec's network is already the effective (narrowed) policy; without one the configured
    // policy binds, so the backend is told it either way.
    const network =
      spec?.network !== undefined
        ? parseNetworkPolicy(spec.network, 'spec.network')
        : this.#configuredNetwork;
    const info = await this.#ctx.backend.create({
      sandboxId: id,
      threadId: identity?.threadId ?? null,
      ...(identity ? { userId: identity.userId } : {}),
      ...(mounts.length > 0 ? { extraMounts: mounts } : {}),
      ...(spec?.image ? { image: spec.image } : {}),
      ...(spec?.resources ? { resources: spec.resources } : {}),
      ...(spec?.labels ? { labels: spec.labels } : {}),
      ...(network !== undefined ? { network } : {}),
    });
    let ready: boolean;
    try {
      ready = await this.#ctx.readinessProbe(info);
    } catch (err) {
      await this.#teardown.destroyUnready(id, info);
      throw err;
    }
    if (!ready) {
      await this.#teardown.destroyUnready(id, info);
      throw new SandboxRuntimeError(
        `Sandbox ${id} failed to become ready within timeout at ${info.sandboxUrl}`,
        { details: { sandbox_id: id } },
      );
    }
    return info;
  }

  async #registerCreated(info: SandboxInfo, identity: AioThreadIdentity | undefined) {
    const { book, logger } = this.#ctx;
    const id = info.sandboxId;
    let client: Sandbox | undefined;
    try {
      client = this.#ctx.createClient(info);
      if (identity) checkIdentity(book, id, identity);
      await this.#publish(id);
      if (book.pool.isReserved(id)) throw new SandboxBeingDestroyedError(id);
      if (identity) checkIdentity(book, id, identity);
      this.#install(id, client, info, identity, identity ? identityKey(identity) : undefined);
    } catch (err) {
      // A sandbox whose ownership cannot be published is never handed out, nor left running
      // for reconciliation to adopt as an orphan. The refused take usually means a dead
      // destroyer's marker, which is not ours to honour with a held lease (stopped directly).
      logger.error(`Could not register new sandbox ${id}; stopping it`, {
        error: errorMessage(err),
      });
      if (client) await this.#ctx.closeClient(client, id, 'create');
      try {
        await this.#ctx.backend.destroy(info);
      } catch (destroyErr) {
        logger.error(`Could not stop unregistered sandbox ${id}`, {
          error: errorMessage(destroyErr),
        });
      }
      throw err;
    }
  }

  /** Active and warm are exclusive: a warm entry for an id that becomes active is dropped. */
  #install(
    id: string,
    client: Sandbox,
    info: SandboxInfo,
    identity: AioThreadIdentity | undefined,
    key: string | undefined,
  ): void {
    // Published again by this instance: its own now, whatever a renewal heard before.
    this.#ctx.supersededHere.delete(id);
    // Every path resumed a paused sandbox before installing it: what the engine said when the info
    // was read is no longer so, and a stale mark would unpause it again on every reuse.
    const running: SandboxInfo = info.paused === true ? { ...info, paused: false } : info;
    // An entry still active here: a discovery or create that landed after a refused stop kept it.
    const previous = this.#ctx.book.install(id, { client, info: running, identity }, key);
    if (previous !== undefined && previous.client !== client) {
      void this.#ctx.closeClient(previous.client, id, 'replace');
    }
  }

  /** End of turn: see `AioSandboxProvider.release`. */
  async release(sandboxId: string): Promise<void> {
    const { book, logger } = this.#ctx;
    // A teardown in flight owns the entry; untracking it here would leave that teardown with
    // nothing to stop.
    if (book.isTearingDown(sandboxId)) {
      logger.debug(`Not parking sandbox ${sandboxId}: its teardown is in flight`);
      return;
    }
    const entry = book.untrackActive(sandboxId);
    if (entry === undefined) {
      logger.debug(`Release of unknown sandbox ${sandboxId} ignored`);
      return;
    }
    // Active and warm are exclusive, so there is no warm entry to keep.
    book.pool.put(sandboxId, { info: entry.info, identity: entry.identity });
    await this.#ctx.closeClient(entry.client, sandboxId, 'release');
    const ownership = this.#ctx.ownershipIfReady();
    if (ownership === undefined || this.#ctx.isClosed()) return;
    const epoch = ownership.epochOf(sandboxId);
    // Parked now: after a flush it does not win the lease back from a peer's turn (`renewLease`).
    if ((await renewLease(this.#ctx, sandboxId)) === 'lost') {
      if (this.#teardown.forgetLost(sandboxId, epoch)) {
        logger.warn(
          `Sandbox ${sandboxId} is owned by another instance now; forgot it (the container keeps running)`,
        );
      }
    }
  }
}
