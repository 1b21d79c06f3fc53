import { AbortedError, SandboxNotFoundError } from '../errors/errors.js';
import { createLeaseOwnerId } from './lease-context.js';
import type { LeaseProvider } from './lease-types.js';
import { getSandboxLeaseManager } from './lease-manager-registry.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import type { Sandbox } from '../contract/sandbox.js';
import type { AgentSkillPolicy } from '../contract/sandbox-provider.js';

export interface LifecycleOperationOptions {
  signal?: AbortSignal;
  logger?: Logger;
}

/**
 * Runs one sandbox operation so that it cannot outlive the hold it runs under. An abort does not
 * abandon a started operation: the returned promise settles only after `operation` has settled,
 * and then rejects with `AbortedError` (an operation failure after the abort is logged, never
 * reported instead of the abort). A caller that releases its lease in `finally` therefore never
 * releases while its own sandbox I/O is still in flight.
 */
export async function runLifecycleOperation<T>(
  operation: () => T | PromiseLike<T>,
  options: LifecycleOperationOptions = {},
): Promise<T> {
  const { signal } = options;
  if (signal?.aborted) throw new AbortedError(undefined, { cause: signal.reason });
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await operation() };
  } catch (error) {
    outcome = { ok: false, error };
  }
  if (signal?.aborted) {
    if (!outcome.ok) {
      (options.logger ?? silentLogger).error('Cancelled sandbox operation failed while draining', {
        error: outcome.error,
      });
    }
    throw new AbortedError(undefined, { cause: signal.reason });
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

export interface SandboxClientLeaseOptions {
  threadId: string;
  userId?: string | undefined;
  /** Owner id prefix, e.g. `gateway:upload`, `channel:attachment`. Default `client`. */
  ownerPrefix?: string;
  /** Default true (normal owner). Upload-style syncs pass false: they never ask for a park. */
  releaseOnLast?: boolean;
  skillPolicy?: AgentSkillPolicy;
  signal?: AbortSignal;
  logger?: Logger;
}

type SandboxOf<P extends LeaseProvider> = NonNullable<ReturnType<P['get']>>;

/** A live client held under its own fresh owner. */
export interface SandboxClientLease<
  S extends Sandbox = Sandbox,
  P extends LeaseProvider = LeaseProvider,
> {
  readonly sandbox: S;
  readonly sandboxId: string;
  readonly ownerId: string;
  readonly provider: P;
  readonly released: boolean;
  /** Drops this owner's hold (idempotent; every call returns the same completion). */
  release(): Promise<void>;
  /** `runLifecycleOperation` against this lease's sandbox. */
  run<T>(
    operation: (sandbox: S) => T | PromiseLike<T>,
    options?: LifecycleOperationOptions,
  ): Promise<T>;
}

/**
 * Acquires a sandbox for one request or sync job under a fresh, unique owner
 * (`<ownerPrefix>:<uuid>`), so the job neither borrows nor ends a run's hold on the same thread.
 * If the client cannot be looked up afterwards the owner is released before the error surfaces
 * (`SandboxNotFoundError('Sandbox not found after acquisition')` when it is simply gone).
 */
export async function acquireSandboxClientLease<P extends LeaseProvider>(
  provider: P,
  options: SandboxClientLeaseOptions,
): Promise<SandboxClientLease<SandboxOf<P>, P>> {
  const manager = getSandboxLeaseManager(provider);
  const ownerId = createLeaseOwnerId(options.ownerPrefix ?? 'client');
  const sandboxId = await manager.acquire(ownerId, {
    threadId: options.threadId,
    userId: options.userId,
    releaseOnLast: options.releaseOnLast ?? true,
    skillPolicy: options.skillPolicy,
    signal: options.signal,
  });
  let sandbox: Sandbox | undefined;
  try {
    sandbox = provider.get(sandboxId);
  } catch (error) {
    await manager.release(ownerId);
    throw error;
  }
  if (sandbox === undefined) {
    await manager.release(ownerId);
    throw new SandboxNotFoundError('Sandbox not found after acquisition', sandboxId);
  }
  let releasing: Promise<void> | undefined;
  const logger = options.logger;
  const live = sandbox as SandboxOf<P>;
  return {
    sandbox: live,
    sandboxId,
    ownerId,
    provider,
    get released() {
      return releasing !== undefined;
    },
    release() {
      releasing ??= manager.release(ownerId);
      return releasing;
    },
    run(operation, runOptions = {}) {
      return runLifecycleOperation(() => operation(live), { logger, ...runOptions });
    },
  };
}
