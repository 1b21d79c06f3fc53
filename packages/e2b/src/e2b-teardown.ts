import { RenewOutcome, threadLayout } from '@sbx/core';
import type { WarmEntry, WarmPoolDestroyReason } from '@sbx/core';
import type { E2BRemoteSandbox, E2BSandboxInfo } from './e2b-client.js';
import { errorMessage, isSandboxGoneError } from './e2b-errors.js';
import { renewOnce } from './e2b-lease-renewal.js';
import type { E2BSandbox } from './e2b-sandbox.js';
import type { Slot } from './local-slots.js';
import { specTimeoutOf } from './metadata.js';
import { syncOutputs } from './output-sync.js';
import { threadKeyText } from './e2b-thread-key.js';
import type { ThreadKey } from './e2b-thread-key.js';
import type { OwnershipClient } from '@sbx/core/provider-kit';
import type { ActiveEntry, E2BProviderContext, Stores, WarmValue } from './e2b-provider-context.js';

/**
 * Every way a VM stops or is handed on: kills under a claimed `del:` marker, the warm pool's
 * destroy hook, the end-of-turn park, the shutdown teardown and reset's hand-over (lease renewal
 * is `E2BLeaseRenewal`). A kill that cannot be confirmed keeps a tombstone (its slot stays counted);
 * the ledger slot is released only after E2B confirmed the VM gone.
 */
export class E2BTeardown {
  readonly #ctx: E2BProviderContext;

  constructor(ctx: E2BProviderContext) {
    this.#ctx = ctx;
  }

  async #own(): Promise<OwnershipClient> {
    return (await this.#ctx.stores()).ownership;
  }

  /**
   * Kills a VM this provider will not hand out and settles its capacity slot: an uncertain kill
   * keeps a tombstone, anything else frees the slot. `ops` is the remote-operation set tracking it
   * (owned for creates and warm reclaims, unowned for discoveries).
   */
  async discardVm(
    id: string,
    sandbox: E2BSandbox,
    slot: Slot,
    ops: Set<string> = this.#ctx.ownedRemoteOps,
  ): Promise<void> {
    const outcome = await this.killAndClose(id, sandbox);
    ops.delete(id);
    if (outcome === 'failed') slot.tombstone(id);
    else slot.release();
  }

  async releaseLocked(id: string): Promise<void> {
    // Gone when a release queued on the thread's lock behind another one gets its turn.
    const entry = this.#ctx.book.active(id);
    if (entry?.key === undefined) return;
    const key = entry.key;
    this.#ctx.book.untrackActive(id);
    const slot = this.#ctx.slots.beginTransition();
    const sandbox = entry.sandbox;
    // Kept past the adapter's close: a racing shutdown may still need to kill through it.
    const remote = sandbox.client;
    try {
      // The sync skips an adapter known dead and marks one it finds gone: either is killed here.
      await syncOutputs(
        sandbox,
        threadLayout(this.#ctx.settings.baseDir, key.userId, key.threadId).threadDir,
        { clock: this.#ctx.clock, logger: this.#ctx.logger },
      );
      if (sandbox.isDead) {
        await this.killAndClose(id, sandbox);
        return;
      }
      await this.pushTimeout(remote);
      if (this.#ctx.isShuttingDown()) {
        await this.killAndClose(id, sandbox);
        return;
      }
      if (
        this.#ctx.book.pool.put(id, { seed: entry.seed ?? this.#ctx.seedOf(key), key }) ===
        undefined
      ) {
        await this.killAndClose(id, sandbox);
        return;
      }
      // Counted as warm from here on: the transition ends before the (possibly slow) close.
      slot.commit();
      // A warm VM is evictable: capacity waiters can now make room.
      this.#ctx.notify();
      await sandbox.close();
    } finally {
      slot.release();
    }
  }

  async releaseAnonymous(id: string, entry: ActiveEntry): Promise<void> {
    // Nothing can ever find a thread-less sandbox again, so parking it would only hold a slot.
    // Untracked in the step `release()` found the entry in: a second release finds nothing.
    this.#ctx.book.untrackActive(id, entry);
    await this.killAndClose(id, entry.sandbox);
    this.#ctx.notify();
  }

  // ------------------------------------------------------------------------------------------
  // capacity

  /**
   * WarmPool destroy hook. `true` = gone (or a peer's, forgotten); `false` keeps its slot. A warm
   * VM is killed only while its lease is ours: after a flush the lease is absent for every holder
   * at once, a stale one's included (a peer may run a turn in the VM since), and a `del:` claim
   * over an absent lease would be granted. It is kept until renewal settles who holds it (without
   * cross-process visibility nobody else can).
   */
  async destroyWarm(entry: WarmEntry<WarmValue>, reason: WarmPoolDestroyReason): Promise<boolean> {
    const id = entry.id;
    const ownership = await this.#own();
    const lease = await renewOnce(this.#ctx, ownership, id);
    if (lease === 'unknown' || (lease === RenewOutcome.LAPSED && ownership.crossProcess)) {
      this.#ctx.logger.info('Not evicting a warm e2b sandbox whose lease is not known to be ours', {
        sandboxId: id,
        reason,
      });
      return false;
    }
    // A peer's lease (LOST) refuses the claim too.
    if (!(await ownership.claim(id, { forDestroy: true }))) {
      ownership.forget(id);
      this.#ctx.logger.info('A peer owns a warm e2b sandbox; forgetting it locally', {
        sandboxId: id,
        reason,
      });
      this.#ctx.notifySoon();
      return true;
    }
    return (await this.#own()).heldTeardown(id, async () => {
      const kill = await this.killById(id);
      if (kill.outcome === 'gone' || kill.outcome === 'killed') {
        this.#ctx.notifySoon();
        return true;
      }
      this.#ctx.logger.warn(
        kill.outcome === 'unreachable'
          ? 'Reconnecting a warm e2b sandbox for eviction failed'
          : 'Killing a warm e2b sandbox failed; keeping it',
        { sandboxId: id, error: errorMessage('error' in kill ? kill.error : undefined) },
      );
      return this.#leaveToShutdown(id);
    });
  }

  /**
   * Kills a VM by id through a connection of its own, under the `del:` marker the caller holds;
   * the ledger slot is released once E2B confirmed it gone (killed, or already not found).
   */
  async killById(
    id: string,
  ): Promise<
    { outcome: 'killed' | 'gone' } | { outcome: 'unreachable' | 'failed'; error: unknown }
  > {
    let remote: E2BRemoteSandbox;
    try {
      remote = await this.#ctx.sdk(() => this.#ctx.client.connect(id));
    } catch (error) {
      if (!isSandboxGoneError(error)) return { outcome: 'unreachable', error };
      await this.ledgerRelease(id);
      return { outcome: 'gone' };
    }
    try {
      await remote.kill();
    } catch (error) {
      return { outcome: 'failed', error };
    } finally {
      await remote.close().catch(() => undefined);
    }
    await this.ledgerRelease(id);
    return { outcome: 'killed' };
  }

  /**
   * An eviction that failed after shutdown began: shutdown snapshotted every warm id (this one
   * included, since the pool keeps an entry whose teardown is in flight) and kills it through a
   * connection of its own. Keeping the entry would leave a warm VM in a provider that no longer
   * reaps anything, so the pool is told to drop it.
   */
  #leaveToShutdown(id: string): boolean {
    if (!this.#ctx.isClosed()) return false;
    this.#ctx.logger.info(
      'Leaving a warm e2b sandbox whose eviction failed to the shutdown teardown',
      {
        sandboxId: id,
      },
    );
    return true;
  }

  async ledgerRelease(id: string): Promise<void> {
    const { capacity } = await this.#ctx.stores();
    if (capacity === undefined) return;
    try {
      await capacity.release(id);
    } catch (error) {
      this.#ctx.logger.warn('Releasing a capacity ledger slot failed (reconciliation repairs it)', {
        sandboxId: id,
        error: errorMessage(error),
      });
    }
  }

  /**
   * Kills a VM we can claim for destruction, then closes its client; a peer-owned VM is only
   * closed. `'destroyed'` (confirmed gone) and `'peer'` (not ours to kill) both free the caller's
   * slot; `'failed'` means the VM may still run, so the caller keeps a tombstone.
   */
  async killAndClose(id: string, sandbox: E2BSandbox): Promise<'destroyed' | 'peer' | 'failed'> {
    const client = sandbox.client;
    let outcome: 'destroyed' | 'peer' | 'failed' = 'failed';
    if (await (await this.#own()).claim(id, { forDestroy: true })) {
      outcome = await (
        await this.#own()
      ).heldTeardown(id, async () => {
        try {
          if (client === undefined) throw new Error('no client: cannot confirm destruction');
          await this.#ctx.sdk(() => client.kill());
          await this.ledgerRelease(id);
          return 'destroyed';
        } catch (error) {
          if (isSandboxGoneError(error)) return 'destroyed';
          this.#ctx.logger.warn('Killing an e2b sandbox failed', {
            sandboxId: id,
            error: errorMessage(error),
          });
          return 'failed';
        }
      });
    } else {
      outcome = 'peer';
      // Whatever lease we had is a peer's now: renewal must not try to keep it.
      (await this.#own()).forget(id);
      this.#ctx.logger.info('Not killing an e2b sandbox a peer owns', { sandboxId: id });
    }
    await sandbox.close();
    return outcome;
  }

  async dropActive(id: string, entry: ActiveEntry): Promise<void> {
    this.#ctx.book.untrackActive(id, entry);
    this.#ctx.vmTimeouts.delete(id);
    await entry.sandbox.close();
    await this.ledgerRelease(id);
    this.#ctx.notify();
  }

  async forgetRemote(id: string): Promise<void> {
    this.#ctx.vmTimeouts.delete(id);
    await this.ledgerRelease(id);
    const ownership = await this.#own();
    if (ownership.holds(id)) await ownership.release(id);
  }

  register(id: string, sandbox: E2BSandbox, key: ThreadKey | undefined, seed: string | undefined) {
    // Active and warm are exclusive: `install` drops a warm entry of the id in the same step.
    this.#ctx.book.install(
      id,
      { sandbox, key, seed },
      key === undefined ? undefined : threadKeyText(key),
    );
  }

  /** A discovered VM's spec timeout (its tag), so renewals keep it. */
  rememberTimeout(info: E2BSandboxInfo): void {
    const seconds = specTimeoutOf(info);
    if (seconds !== undefined) this.#ctx.vmTimeouts.set(info.sandboxId, seconds);
  }

  async pushTimeout(remote: E2BRemoteSandbox | undefined): Promise<void> {
    if (remote === undefined) return;
    // The VM's own timeout (its acquire spec's, kept from its creation) else the configured one.
    const seconds =
      this.#ctx.vmTimeouts.get(remote.sandboxId) ?? this.#ctx.settings.idleTimeoutSeconds;
    if (seconds <= 0) return;
    try {
      await this.#ctx.sdk(() => remote.setTimeout(seconds * 1000));
    } catch (error) {
      this.#ctx.logger.debug('Refreshing the e2b sandbox timeout failed', {
        sandboxId: remote.sandboxId,
        error: errorMessage(error),
      });
    }
  }

  // ------------------------------------------------------------------------------------------
  // shutdown and hand-over

  /** Shutdown, after the background tasks stopped: kills what is ours, forgets the rest. */
  async shutdownAll(): Promise<Stores | undefined> {
    await this.#ctx.book.pool.stop();
    const active = this.#ctx.book.activeEntries();
    const parked = new Set<string>([
      ...this.#ctx.book.pool.ids(),
      ...this.#ctx.slots.tombstones.keys(),
      ...this.#ctx.ownedRemoteOps,
    ]);
    // Ours to kill: the leases held, and every warm entry and tombstone. A warm VM whose eviction
    // kill failed, or a tombstone, is no longer in `#owned` (the held teardown dropped it when its
    // kill ended), yet nothing else will ever kill it: left alone it runs until its E2B timeout
    // and holds a ledger slot. The claim below still keeps a VM a peer has taken since.
    const owned = new Set([
      ...(this.#ctx.clientIfReady()?.heldIds() ?? []),
      ...this.#ctx.book.pool.ids(),
      ...this.#ctx.slots.tombstones.keys(),
    ]);
    const stores = await this.#emptyBook();
    for (const [id, entry] of active) {
      parked.delete(id);
      // An active VM's lease is always held here (renewal untracks one it loses), so its claim
      // alone decides: a VM a peer has taken since is only closed.
      if (stores !== undefined) await this.killAndClose(id, entry.sandbox);
      else await entry.sandbox.close();
    }
    for (const id of parked) {
      if (
        stores === undefined ||
        !owned.has(id) ||
        !(await (await this.#own()).claim(id, { forDestroy: true }))
      )
        continue;
      await (
        await this.#own()
      ).heldTeardown(id, async () => {
        const kill = await this.killById(id);
        if (kill.outcome === 'unreachable' || kill.outcome === 'failed') {
          this.#ctx.logger.warn('Killing an e2b sandbox at shutdown failed', {
            sandboxId: id,
            error: errorMessage(kill.error),
          });
        }
      });
    }
    return stores;
  }

  /**
   * `reset()`: gives everything up without killing it. The book is emptied in one synchronous
   * step (as at shutdown, so a waiter or a late release sees a closed provider, not a half-empty
   * one), clients are closed and every lease this instance holds is released, except one a
   * held teardown is using (its kill finishes and releases it).
   */
  async handOverAll(): Promise<Stores | undefined> {
    const { book } = this.#ctx;
    await book.pool.stop();
    const active = book.activeEntries();
    const stores = await this.#emptyBook();
    for (const [, entry] of active) await entry.sandbox.close();
    if (stores !== undefined) {
      const { ownership } = stores;
      for (const id of ownership.heldIds()) {
        if (!ownership.isTearingDown(id)) await ownership.release(id);
      }
    }
    return stores;
  }

  /**
   * The first step of shutdown and of a hand-over: the book emptied in one synchronous step (a
   * waiter or a late release then sees a closed provider, not a half-empty one), waiters woken,
   * the SDK pool closed. Resolves with the stores, or undefined when they never opened.
   */
  async #emptyBook(): Promise<Stores | undefined> {
    const { book } = this.#ctx;
    book.clearActive();
    for (const id of book.pool.ids()) book.pool.forget(id);
    this.#ctx.ownedRemoteOps.clear();
    this.#ctx.unownedRemoteOps.clear();
    this.#ctx.slots.clear();
    this.#ctx.notify();
    this.#ctx.serializer.close();
    try {
      return await this.#ctx.stores();
    } catch {
      return undefined;
    }
  }
}
