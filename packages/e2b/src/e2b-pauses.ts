import {
  InvalidArgumentError,
  SandboxBusyError,
  SandboxNotFoundError,
  getSandboxLeaseManager,
} from '@sbx/core';
import type { LeaseProvider } from '@sbx/core';
import type { E2BAcquirePaths } from './e2b-acquire-paths.js';
import type { E2BProviderContext } from './e2b-provider-context.js';
import type { E2BTeardown } from './e2b-teardown.js';
import type { ThreadKey } from './e2b-thread-key.js';

/** Runs `work` under the acquire lock of `key`'s thread (the provider's serializer). */
export type HoldE2BThread = <T>(key: ThreadKey, work: () => Promise<T>) => Promise<T>;

/**
 * Pause and resume of E2B VMs, on the SDK's own terms: `Sandbox.pause(id)` keeps the VM's memory
 * and files, and `Sandbox.connect(id)` resumes a paused VM. A paused VM's connections fail until
 * then, so this instance never hands one out: `pause` parks the VM warm first (the end of a turn:
 * outputs synced, client closed) and pauses it there; `resume` and the thread's next acquire take
 * it back by the warm path, whose `connect` resumes it. Another instance finds it by its tags (the
 * SDK lists paused VMs by default) and its `connect` resumes it likewise.
 *
 * Refused with `SandboxBusyError` while a turn holds an execution lease on the sandbox (not waited
 * for; see the AIO provider's `AioPauses` for why); the lease manager's reservation is held for the
 * whole pause, so no turn binds it half-way. Pause and resume hold the thread's acquire lock.
 */
export class E2BPauses {
  readonly #ctx: E2BProviderContext;
  readonly #teardown: E2BTeardown;
  readonly #paths: E2BAcquirePaths;
  readonly #hold: HoldE2BThread;
  readonly #leaseOwner: LeaseProvider;

  constructor(deps: {
    ctx: E2BProviderContext;
    teardown: E2BTeardown;
    paths: E2BAcquirePaths;
    hold: HoldE2BThread;
    leaseOwner: LeaseProvider;
  }) {
    this.#ctx = deps.ctx;
    this.#teardown = deps.teardown;
    this.#paths = deps.paths;
    this.#hold = deps.hold;
    this.#leaseOwner = deps.leaseOwner;
  }

  async pause(id: string): Promise<void> {
    const key = this.#keyOf(id);
    const reservation = getSandboxLeaseManager(this.#leaseOwner, {
      logger: this.#ctx.logger,
    }).tryReserveIdleTeardown(id);
    if (reservation === undefined) throw new SandboxBusyError(id, 'pause');
    try {
      await this.#hold(key, async () => {
        if (this.#ctx.book.active(id) !== undefined) await this.#teardown.releaseLocked(id);
        // The release kills a VM it finds dead instead of parking it.
        if (!this.#ctx.book.pool.has(id)) {
          throw new SandboxNotFoundError('Sandbox is gone', id);
        }
        await this.#ctx.sdk(() => this.#ctx.client.pause(id));
      });
    } finally {
      reservation.release();
    }
    this.#ctx.logger.info('Paused e2b sandbox', { sandboxId: id });
  }

  async resume(id: string): Promise<void> {
    const key = this.#keyOf(id);
    await this.#hold(key, async () => {
      if (this.#ctx.book.active(id) !== undefined) return;
      // The warm path's `connect` resumes the VM (the SDK's rule) and hands it out active.
      const reclaimed = await this.#paths.reclaim(key);
      if (reclaimed !== id) throw new SandboxNotFoundError('Sandbox could not be resumed', id);
    });
    this.#ctx.logger.info('Resumed e2b sandbox', { sandboxId: id });
  }

  /** The thread of a VM this instance holds (active or warm). */
  #keyOf(id: string): ThreadKey {
    const { book } = this.#ctx;
    const active = book.active(id);
    const key = active !== undefined ? active.key : book.pool.get(id)?.value.key;
    if (active === undefined && !book.pool.has(id)) {
      throw new SandboxNotFoundError('Sandbox is not held by this instance', id);
    }
    if (key === undefined) {
      // A thread-less VM is never found again, so a paused one could never be resumed.
      throw new InvalidArgumentError('a sandbox without a thread cannot be paused', {
        details: { sandbox_id: id },
      });
    }
    return key;
  }
}
