import { AcquireSerializer, serializerKey } from '../serializer/acquire-serializer.js';
import {
  AbortedError,
  InvalidArgumentError,
  LeaseStateError,
  SandboxNotFoundError,
} from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import type { Sandbox } from '../contract/sandbox.js';
import type { AcquireOptions } from '../contract/sandbox-provider.js';

import type {
  IdleTeardownReservation,
  LeaseAcquireOptions,
  LeaseBindingSnapshot,
  LeaseIdentity,
  LeaseManagerSnapshot,
  LeaseProvider,
  LeaseReleaseOptions,
  LeaseRetainOptions,
  LeaseReuseOptions,
  SandboxLeaseManagerOptions,
} from './lease-types.js';

interface Binding {
  readonly sandboxId: string;
  readonly threadKey: string;
  readonly userId: string | undefined;
  readonly threadId: string;
  releaseOnLast: boolean;
}

function abortError(signal: AbortSignal): AbortedError {
  return new AbortedError(undefined, { cause: signal.reason });
}

function assertOwner(owner: unknown): asserts owner is string {
  if (typeof owner !== 'string' || owner.length === 0) {
    throw new InvalidArgumentError('Sandbox lease owner id must be a non-empty string');
  }
}

function threadKeyOf(identity: LeaseIdentity): string {
  if (typeof identity.threadId !== 'string' || identity.threadId.length === 0) {
    // Anonymous acquires (no thread) have no lifecycle to share and never enter the manager.
    throw new InvalidArgumentError('Sandbox leases need a non-empty threadId');
  }
  return serializerKey(identity.userId ?? null, identity.threadId);
}

/**
 * Process-local bookkeeping of who still holds a provider's live sandbox client, so that only the
 * last holder performs a requested park (`provider.release`).
 *
 * Model: `binding[owner]` (one per owner), `holders[sandbox]` (non-empty sets only) and
 * `pending` (sandboxes whose park waits for the last holder). Every transition for one
 * (user, thread) runs under that key's `AcquireSerializer` lock for its whole duration,
 * provider calls included, so a lookup-then-bind can never interleave with a last-holder
 * release of the same thread. The maps themselves are only touched in synchronous stretches;
 * nothing is locked across provider I/O except the one key whose transition is running.
 *
 * Kept whole: every transition reads and writes the same three maps under the same locks, so the
 * invariants (L1: `holders` is exactly the inverse of `bindings`) are checked in one place. The
 * types are in `lease-types.ts`, the one manager per provider in `lease-manager-registry.ts`.
 */
export class SandboxLeaseManager {
  readonly provider: LeaseProvider;
  readonly #serializer: AcquireSerializer;
  readonly #logger: Logger;
  readonly #bindings = new Map<string, Binding>();
  readonly #holders = new Map<string, Set<string>>();
  readonly #pending = new Set<string>();
  readonly #teardown = new Set<string>();

  constructor(provider: LeaseProvider, options: SandboxLeaseManagerOptions = {}) {
    this.provider = provider;
    this.#logger = options.logger ?? silentLogger;
    this.#serializer = new AcquireSerializer({
      name: 'sandbox-execution-lease',
      logger: this.#logger,
    });
  }

  get closed(): boolean {
    return this.#serializer.closed;
  }

  /**
   * Binds `owner` to a live sandbox for its thread: the owner's existing live binding if it has
   * one (no provider call; a borrower asking as a normal owner is upgraded), otherwise
   * `provider.admit` then `provider.acquire`.
   *
   * An abort while waiting for the thread's lock rejects at once. An abort after the provider
   * acquire started lets it finish, rolls its result back (parked unless another owner holds it),
   * creates no binding and only then rejects with `AbortedError`; reconciliation failures are
   * logged and never replace the abort.
   */
  async acquire(owner: string, options: LeaseAcquireOptions): Promise<string> {
    assertOwner(owner);
    const key = threadKeyOf(options);
    const releaseOnLast = options.releaseOnLast ?? true;
    return this.#serializer.hold(
      key,
      async () => {
        this.#assertIdentity(owner, key);
        const live = this.#liveBinding(owner);
        if (live !== undefined) {
          if (releaseOnLast) live.releaseOnLast = true;
          return live.sandboxId;
        }
        return this.#acquireFresh(owner, key, options, releaseOnLast);
      },
      { signal: options.signal },
    );
  }

  /**
   * Binds `owner` to an inherited or checkpointed id without checking that it is alive (that is
   * revalidated on first use). Re-binding to another id of the same thread leaves the old one by
   * the normal rules, after the new binding exists.
   */
  async retain(owner: string, sandboxId: string, options: LeaseRetainOptions): Promise<void> {
    assertOwner(owner);
    this.#assertSandboxId(sandboxId);
    const key = threadKeyOf(options);
    const releaseOnLast = options.releaseOnLast ?? true;
    return this.#serializer.hold(
      key,
      async () => {
        const left = this.#bind(owner, key, options, sandboxId, releaseOnLast);
        if (left !== undefined) await this.#completeLeave(owner, left);
      },
      { signal: options.signal },
    );
  }

  /**
   * One transition: the owner's live binding if any; else `sandboxId` if it is live (bound with
   * `releaseOnLast`); else a replacement acquired and bound with `acquireReleaseOnLast`.
   * Cancellation behaves as in `acquire`.
   */
  async reuseOrAcquire(
    owner: string,
    sandboxId: string,
    options: LeaseReuseOptions,
  ): Promise<string> {
    assertOwner(owner);
    this.#assertSandboxId(sandboxId);
    const key = threadKeyOf(options);
    const releaseOnLast = options.releaseOnLast ?? true;
    return this.#serializer.hold(
      key,
      async () => {
        this.#assertIdentity(owner, key);
        const live = this.#liveBinding(owner);
        if (live !== undefined) {
          if (releaseOnLast) live.releaseOnLast = true;
          return live.sandboxId;
        }
        // A sandbox reserved for idle teardown is as good as gone: binding it would hand out a
        // client whose stop is already under way.
        if (!this.#teardown.has(sandboxId) && this.provider.get(sandboxId) !== undefined) {
          this.#bind(owner, key, options, sandboxId, releaseOnLast);
          return sandboxId;
        }
        return this.#acquireFresh(owner, key, options, options.acquireReleaseOnLast ?? true);
      },
      { signal: options.signal },
    );
  }

  /**
   * Drops `owner`'s hold. Unknown owners are a no-op, so fences may repeat it. Cleans the owner's
   * command scope on the live client first (a failure is logged and does not stop the park), then
   * parks the sandbox iff this was its last holder and a normal owner asked for a park. An abort
   * cannot interrupt any of this; it is reported after the release completed.
   */
  async release(owner: string, options: LeaseReleaseOptions = {}): Promise<void> {
    assertOwner(owner);
    const binding = this.#bindings.get(owner);
    if (binding === undefined) return;
    const { signal } = options;
    const work = this.#serializer.hold(binding.threadKey, async () => {
      const current = this.#bindings.get(owner);
      if (current === undefined) return; // a concurrent release got there first
      this.#leave(owner, current);
      await this.#completeLeave(owner, current.sandboxId);
    });
    if (signal === undefined) return work;
    try {
      await work;
    } catch (error) {
      if (!signal.aborted) throw error;
      this.#logger.error('Cancelled sandbox release failed during reconciliation', {
        owner,
        sandboxId: binding.sandboxId,
        error,
      });
    }
    if (signal.aborted) throw abortError(signal);
  }

  /** The sandbox `owner` is bound to, if any (diagnostics and tests). */
  bindingFor(owner: string): string | undefined {
    return this.#bindings.get(owner)?.sandboxId;
  }

  /** Current holders of `sandboxId`, sorted. */
  holdersOf(sandboxId: string): string[] {
    return [...(this.#holders.get(sandboxId) ?? [])].sort();
  }

  isPending(sandboxId: string): boolean {
    return this.#pending.has(sandboxId);
  }

  /** A copy of the whole state (diagnostics and tests). */
  snapshot(): LeaseManagerSnapshot {
    const bindings: Record<string, LeaseBindingSnapshot> = {};
    for (const [owner, b] of this.#bindings) {
      bindings[owner] = {
        sandboxId: b.sandboxId,
        userId: b.userId,
        threadId: b.threadId,
        releaseOnLast: b.releaseOnLast,
      };
    }
    const holders: Record<string, string[]> = {};
    for (const [id, set] of this.#holders) holders[id] = [...set].sort();
    return { bindings, holders, pending: [...this.#pending].sort() };
  }

  /**
   * Lets a provider tear an idle sandbox down without racing a new holder: refused (undefined)
   * while anyone holds `sandboxId` or another teardown has it reserved. While reserved, binding
   * the id fails with a `LeaseStateError` that names the teardown, and `reuseOrAcquire` acquires
   * a replacement instead of reusing it.
   */
  tryReserveIdleTeardown(sandboxId: string): IdleTeardownReservation | undefined {
    if (this.#holders.has(sandboxId) || this.#teardown.has(sandboxId)) return undefined;
    this.#teardown.add(sandboxId);
    let released = false;
    return {
      sandboxId,
      release: () => {
        if (released) return;
        released = true;
        this.#teardown.delete(sandboxId);
      },
    };
  }

  /**
   * Idempotent. Later transitions reject with `SerializerClosedError`; transitions already running
   * finish. Bindings are kept (releasing an owner after close also rejects).
   */
  close(): void {
    this.#serializer.close();
  }

  // --- transitions (all run under the thread key's lock) ------------------------------------

  async #acquireFresh(
    owner: string,
    key: string,
    options: LeaseAcquireOptions,
    releaseOnLast: boolean,
  ): Promise<string> {
    const { signal } = options;
    const request: AcquireOptions = { userId: options.userId, threadId: options.threadId };
    if (options.skillPolicy !== undefined) request.skillPolicy = options.skillPolicy;
    if (options.spec !== undefined) request.spec = options.spec;
    this.provider.admit?.(request);
    let sandboxId: string;
    try {
      // Deliberately no signal: a half-finished provider acquire could leave a sandbox nobody
      // tracks. It always completes and is reconciled below.
      sandboxId = await this.provider.acquire(request);
    } catch (error) {
      if (signal?.aborted) {
        this.#logger.error('Cancelled sandbox acquire failed during reconciliation', {
          owner,
          error,
        });
        throw abortError(signal);
      }
      throw error;
    }
    if (signal?.aborted) {
      await this.#rollback(
        sandboxId,
        owner,
        'Cancelled sandbox acquire rollback failed during reconciliation',
      );
      throw abortError(signal);
    }
    let found: Sandbox | undefined;
    try {
      found = this.provider.get(sandboxId);
    } catch (error) {
      await this.#rollback(sandboxId, owner, 'Sandbox acquire rollback failed');
      throw error;
    }
    if (found === undefined) {
      await this.#rollback(sandboxId, owner, 'Sandbox acquire rollback failed');
      throw new SandboxNotFoundError('Sandbox not found after acquisition', sandboxId);
    }
    try {
      this.#bind(owner, key, options, sandboxId, releaseOnLast);
    } catch (error) {
      await this.#rollback(sandboxId, owner, 'Sandbox acquire rollback failed');
      throw error;
    }
    return sandboxId;
  }

  /**
   * Undoes a fresh acquire that will not be bound. It counts as a normal owner that joined and
   * left: parked now if nobody holds the id, otherwise left pending for its last holder (a
   * borrower holding it must not be parked under, nor leak the park). Never throws: the caller
   * is already reporting the reason for the rollback.
   */
  async #rollback(sandboxId: string, owner: string, failureMessage: string): Promise<void> {
    if (this.#holders.has(sandboxId)) {
      this.#pending.add(sandboxId);
      return;
    }
    this.#pending.delete(sandboxId);
    try {
      await this.provider.release(sandboxId);
    } catch (error) {
      this.#logger.error(failureMessage, { owner, sandboxId, error });
    }
  }

  // --- synchronous state changes -------------------------------------------------------------

  #assertSandboxId(sandboxId: unknown): void {
    if (typeof sandboxId !== 'string' || sandboxId.length === 0) {
      throw new InvalidArgumentError('Sandbox id must be a non-empty string');
    }
  }

  #assertIdentity(owner: string, key: string): void {
    const binding = this.#bindings.get(owner);
    if (binding !== undefined && binding.threadKey !== key) {
      throw new LeaseStateError(
        `Sandbox lease owner '${owner}' cannot move between thread identities`,
      );
    }
  }

  /** The owner's binding if its sandbox is alive; a stale one is dropped without asking for a park. */
  #liveBinding(owner: string): Binding | undefined {
    const binding = this.#bindings.get(owner);
    if (binding === undefined) return undefined;
    if (this.provider.get(binding.sandboxId) !== undefined) return binding;
    this.#unbind(owner, binding);
    // The sandbox is gone; a park still pending for it would only release a dead id later.
    if (!this.#holders.has(binding.sandboxId)) this.#pending.delete(binding.sandboxId);
    return undefined;
  }

  /**
   * Binds `owner` to `sandboxId`. Returns the id it left, if it moved (the caller completes that
   * leave after the bind, so the old sandbox's park cannot precede the new hold).
   */
  #bind(
    owner: string,
    key: string,
    identity: LeaseIdentity,
    sandboxId: string,
    releaseOnLast: boolean,
  ): string | undefined {
    this.#assertIdentity(owner, key);
    const existing = this.#bindings.get(owner);
    if (existing !== undefined && existing.sandboxId === sandboxId) {
      // Monotonic: a borrower asking as a normal owner becomes one; never the reverse.
      if (releaseOnLast) existing.releaseOnLast = true;
      return undefined;
    }
    if (this.#teardown.has(sandboxId)) {
      throw new LeaseStateError(
        `Sandbox '${sandboxId}' is reserved for idle teardown and cannot be bound`,
      );
    }
    let left: string | undefined;
    if (existing !== undefined) {
      this.#leave(owner, existing);
      left = existing.sandboxId;
    }
    this.#bindings.set(owner, {
      sandboxId,
      threadKey: key,
      userId: identity.userId,
      threadId: identity.threadId,
      releaseOnLast,
    });
    let set = this.#holders.get(sandboxId);
    if (set === undefined) {
      set = new Set();
      this.#holders.set(sandboxId, set);
    }
    set.add(owner);
    return left;
  }

  #unbind(owner: string, binding: Binding): void {
    this.#bindings.delete(owner);
    const set = this.#holders.get(binding.sandboxId);
    if (set === undefined) return;
    set.delete(owner);
    if (set.size === 0) this.#holders.delete(binding.sandboxId);
  }

  /** Removes the hold; a normal owner leaving asks for a park (even if others still hold it). */
  #leave(owner: string, binding: Binding): void {
    this.#unbind(owner, binding);
    if (binding.releaseOnLast) this.#pending.add(binding.sandboxId);
  }

  /**
   * The I/O half of a leave: scope cleanup on the live client, then the park if the sandbox has
   * no holders and a park is pending. The holder check is taken after the cleanup so an owner of
   * another thread that joined the same id meanwhile inherits the pending park instead of having
   * its sandbox parked underneath it.
   */
  async #completeLeave(owner: string, sandboxId: string): Promise<void> {
    let sandbox: Sandbox | undefined;
    try {
      sandbox = this.provider.get(sandboxId);
    } catch (error) {
      this.#logger.warn('Sandbox lookup failed during lease release', { owner, sandboxId, error });
    }
    if (sandbox !== undefined && typeof sandbox.releaseCommandScope === 'function') {
      try {
        await sandbox.releaseCommandScope(owner);
      } catch (error) {
        this.#logger.warn('Sandbox command scope cleanup failed during lease release', {
          owner,
          sandboxId,
          error,
        });
      }
    }
    if (this.#holders.has(sandboxId) || !this.#pending.has(sandboxId)) return;
    this.#pending.delete(sandboxId);
    await this.provider.release(sandboxId);
  }
}
