import {
  InvalidArgumentError,
  SandboxAuthorizationError,
  acquireSandboxClientLease,
} from '@sbx/core';
import type { LeaseProvider, Logger, SandboxClientLease } from '@sbx/core';
import type { Principal } from './principal.js';
import { authorizeSandboxExecution } from './sandbox-gate.js';
import type { SandboxGateOptions } from './sandbox-gate.js';
import { describeError } from './required-warnings-logger.js';

/** What a gateway request syncs into the sandbox. */
export type GatewaySyncKind = 'upload' | 'artifact';

/**
 * Lease owner prefix and parking behaviour per request kind. An upload fences the client while it
 * copies files but never asks to park it (the run that uses the files decides that); an artifact
 * update is a normal holder whose release may park the sandbox.
 */
export const GATEWAY_SYNC_LEASES: Readonly<
  Record<GatewaySyncKind, { readonly ownerPrefix: string; readonly releaseOnLast: boolean }>
> = Object.freeze({
  upload: Object.freeze({ ownerPrefix: 'gateway:upload', releaseOnLast: false }),
  artifact: Object.freeze({ ownerPrefix: 'gateway:artifact', releaseOnLast: true }),
});

type Sandboxed<P extends LeaseProvider> = NonNullable<ReturnType<P['get']>>;

export interface TryAcquireSandboxForRequestOptions<P extends LeaseProvider> extends Omit<
  SandboxGateOptions,
  'logger'
> {
  provider: P;
  /**
   * The caller. `null` means the request has no resolvable user (e.g. an internal call made without
   * a request); the gate is then skipped, as for anonymous callers elsewhere. Passing `null` is
   * explicit on purpose: an unresolved user must never slip through by omission.
   *
   * Gateway requests carry no caller-supplied attributes, and an internal system caller should be
   * given `userRole: undefined` so it falls under `default_role`.
   */
  principal: Principal | null;
  threadId: string;
  userId?: string | undefined;
  kind: GatewaySyncKind;
  signal?: AbortSignal;
  logger?: Logger;
}

/**
 * Gate, then hold the thread's sandbox for one gateway request (upload or artifact sync).
 *
 * Allowed → a client lease under a fresh `gateway:<kind>:<uuid>` owner. The caller runs its sandbox
 * operations and calls `lease.release()` after the last one (in `finally`; release is idempotent).
 * Denied → `undefined`, nothing acquired: the caller skips only the sandbox sync, and the request's
 * primary work (writing the upload to the thread directory, updating the artifact on the host)
 * still succeeds.
 *
 * Errors other than a deny propagate (acquisition failure, `SandboxNotFoundError` when the sandbox
 * vanished right after acquisition — its owner is released first).
 */
export async function tryAcquireSandboxForRequest<P extends LeaseProvider>(
  options: TryAcquireSandboxForRequestOptions<P>,
): Promise<SandboxClientLease<Sandboxed<P>, P> | undefined> {
  const { provider, principal, threadId, userId, kind, signal, logger, ...gate } = options;
  const lease = GATEWAY_SYNC_LEASES[kind];
  if (!lease) throw new InvalidArgumentError(`unknown gateway sync kind '${String(kind)}'`);

  if (principal !== null) {
    try {
      await authorizeSandboxExecution(principal, logger ? { ...gate, logger } : gate);
    } catch (err) {
      if (!(err instanceof SandboxAuthorizationError)) throw err;
      logger?.info('Sandbox sync skipped: sandbox execution is not permitted for the caller', {
        kind,
        threadId,
        ...(err.role === undefined ? {} : { role: err.role }),
        error: describeError(err),
      });
      return undefined;
    }
  }

  return acquireSandboxClientLease(provider, {
    threadId,
    userId,
    ownerPrefix: lease.ownerPrefix,
    releaseOnLast: lease.releaseOnLast,
    ...(signal ? { signal } : {}),
    ...(logger ? { logger } : {}),
  });
}
