import {
  CapabilityNotSupportedError,
  SandboxBusyError,
  SandboxNotFoundError,
  SandboxRuntimeError,
} from '@sbx/core';
import { serializerKey } from '@sbx/core/provider-kit';
import type { AioThreadIdentity } from './aio-identity.js';
import type { AioProviderContext } from './aio-provider-context.js';
import type { SandboxInfo } from './sandbox-info.js';

/** Runs `work` under the acquire lock of the thread `key` names (the provider's serializer). */
export type HoldThread = <T>(key: string, work: () => Promise<T>) => Promise<T>;

const PROVIDER = 'AioSandboxProvider';

/**
 * Pause and resume of AIO sandboxes (`docker pause` / `unpause`), and the transparent resume an
 * acquire does.
 *
 * The record of a pause is the container's own state: every instance on the same engine reads it
 * (`discover`, `listRunning`), so an instance that never saw the pause still resumes the sandbox
 * when its thread is acquired there. The pausing instance keeps the sandbox where it was (active
 * or warm) and keeps renewing its ownership lease: a paused sandbox is still owned, and reaped by
 * the same rules as any other (the engine stops a paused container).
 *
 * Races, each closed here:
 * - a turn running commands: refused with `SandboxBusyError` while an execution lease is held (the
 *   idle-teardown reservation of the lease manager, held for the whole pause, also keeps a new turn
 *   from binding the sandbox half-way). Refused rather than waited for: a turn has no bounded
 *   length, and a command frozen half-way by someone not running it would look hung to its caller.
 * - an acquire of the same thread: pause and resume hold the thread's acquire lock, so an acquire
 *   never hands out a sandbox that is being paused; it resumes one that is paused.
 * - a release racing a resume: release moves the entry between active and warm but leaves the
 *   paused mark, which only a completed unpause removes, so neither order leaves a paused
 *   container marked running or the reverse.
 * - two instances resuming at once: the unpause is idempotent (the second finds nothing to do).
 */
export class AioPauses {
  readonly #ctx: AioProviderContext;
  readonly #hold: HoldThread;

  constructor(ctx: AioProviderContext, hold: HoldThread) {
    this.#ctx = ctx;
    this.#hold = hold;
  }

  /** Whether the backend can pause (a provisioner's Pods cannot). */
  get supported(): boolean {
    const { backend } = this.#ctx;
    return typeof backend.pause === 'function' && typeof backend.unpause === 'function';
  }

  isPaused(id: string): boolean {
    return this.#ctx.paused.has(id);
  }

  async pause(id: string): Promise<void> {
    const backend = this.#backendOrRefuse('pause');
    this.#prune();
    const identity = this.#tracked(id).identity;
    const reservation = this.#ctx.tryReserveIdleTeardown(id);
    if (reservation === undefined) throw new SandboxBusyError(id, 'pause');
    try {
      await this.#underLock(identity, async () => {
        // Taken again under the lock: a teardown or a lost lease may have forgotten it meanwhile.
        const { info } = this.#tracked(id);
        // Marked before the engine call: from here on `get` no longer hands it out.
        this.#ctx.paused.add(id);
        try {
          await backend.pause(info);
        } catch (err) {
          this.#ctx.paused.delete(id);
          throw err;
        }
      });
    } finally {
      reservation.release();
    }
    this.#ctx.logger.info(`Paused sandbox ${id}`);
  }

  async resume(id: string): Promise<void> {
    const backend = this.#backendOrRefuse('resume');
    this.#prune();
    const identity = this.#tracked(id).identity;
    await this.#underLock(identity, async () => {
      const { info } = this.#tracked(id);
      await backend.unpause(info);
      this.#ctx.paused.delete(id);
    });
    this.#ctx.logger.info(`Resumed sandbox ${id}`);
  }

  /**
   * Called by an acquire (under the thread's lock) on a sandbox it is about to hand out: unpauses
   * it when this instance paused it or the engine reported it paused. A discovered one is also
   * waited for (discovery skipped the readiness wait of a container that could not answer).
   */
  async resumeForAcquire(id: string, info: SandboxInfo, discovered: boolean): Promise<void> {
    if (!this.#ctx.paused.has(id) && info.paused !== true) return;
    const { backend } = this.#ctx;
    if (typeof backend.unpause !== 'function') {
      throw new SandboxRuntimeError(`Sandbox ${id} is paused and this backend cannot unpause it`, {
        details: { sandbox_id: id },
      });
    }
    await backend.unpause(info);
    this.#ctx.paused.delete(id);
    this.#ctx.logger.info(`Resumed paused sandbox ${id} for an acquire`);
    if (discovered && !(await this.#ctx.readinessProbe(info))) {
      throw new SandboxRuntimeError(`Sandbox ${id} did not answer after it was resumed`, {
        details: { sandbox_id: id },
      });
    }
  }

  #backendOrRefuse(capability: 'pause' | 'resume') {
    const { backend } = this.#ctx;
    if (typeof backend.pause !== 'function' || typeof backend.unpause !== 'function') {
      throw CapabilityNotSupportedError.lifecycle(
        PROVIDER,
        capability,
        `the ${backend.kind} backend cannot pause a sandbox`,
      );
    }
    return { pause: backend.pause.bind(backend), unpause: backend.unpause.bind(backend) };
  }

  /** The entry this instance holds for `id` (active or warm), or `SandboxNotFoundError`. */
  #tracked(id: string): { info: SandboxInfo; identity: AioThreadIdentity | undefined } {
    const { book } = this.#ctx;
    if (book.isTearingDown(id) || book.pool.isReserved(id)) {
      throw new SandboxNotFoundError('Sandbox is being torn down', id);
    }
    const active = book.active(id);
    if (active !== undefined) return { info: active.info, identity: active.identity };
    const warm = book.pool.get(id);
    if (warm !== undefined) return { info: warm.value.info, identity: warm.value.identity };
    throw new SandboxNotFoundError('Sandbox is not held by this instance', id);
  }

  async #underLock<T>(identity: AioThreadIdentity | undefined, work: () => Promise<T>) {
    // An anonymous sandbox is never acquired again, so there is no acquire to exclude.
    if (identity === undefined) return work();
    return this.#hold(serializerKey(identity.userId, identity.threadId), work);
  }

  /** Marks of sandboxes this instance no longer holds (torn down, lost to a peer) are dropped. */
  #prune(): void {
    const { book, paused } = this.#ctx;
    for (const id of paused) {
      if (!book.isActive(id) && !book.pool.has(id)) paused.delete(id);
    }
  }
}
