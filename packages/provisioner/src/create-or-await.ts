import { sleep } from '@sbx/core';
import type { Clock, Logger } from '@sbx/core';
import { ProvisionerHttpError, isKubeStatus } from './provisioner-errors.js';

/** What a client is told to wait before repeating a create that met an object being deleted. */
export const TERMINATING_RETRY_AFTER_SECONDS = 5;

/** Whether the object is being deleted (it has a `deletionTimestamp`). */
export function isTerminating(
  o: { metadata?: { deletionTimestamp?: unknown } } | undefined,
): boolean {
  return o?.metadata?.deletionTimestamp !== undefined && o.metadata.deletionTimestamp !== null;
}

export interface CreateOrAwaitOptions {
  clock: Clock;
  logger: Logger;
  /** How long to wait for an object being deleted to go. */
  waitMs: number;
  pollIntervalMs: number;
  /** Repeats a call on a transient answer. */
  transient: <T>(call: () => Promise<T>) => Promise<T>;
}

/**
 * Creates the object; a 409 means it exists. One that is not being deleted is used as it is (a
 * retry, a second replica, a create cut short). One that is being deleted (a delete in progress,
 * a Pod on a node that is down) must never be handed out: wait, bounded, for it to go and create
 * it afresh, else answer 503 with `Retry-After`.
 *
 * @throws ProvisionerHttpError 503 when the object is still being deleted at the end of the wait
 */
export async function createOrAwait(
  options: CreateOrAwaitOptions,
  kind: string,
  name: string,
  create: () => Promise<unknown>,
  read: () => Promise<{ metadata?: { deletionTimestamp?: unknown } }>,
): Promise<void> {
  const { clock, logger, transient } = options;
  const deadline = clock.now() + options.waitMs;
  const busy = () =>
    new ProvisionerHttpError(
      503,
      `${kind} ${name} is still being deleted; retry after ${TERMINATING_RETRY_AFTER_SECONDS} s`,
      { retryAfterSeconds: TERMINATING_RETRY_AFTER_SECONDS },
    );
  for (;;) {
    try {
      await transient(create);
      logger.info(`created ${kind.toLowerCase()}`, { name });
      return;
    } catch (err) {
      if (!isKubeStatus(err, 409)) throw err;
    }
    let found: { metadata?: { deletionTimestamp?: unknown } };
    try {
      found = await transient(read);
    } catch (err) {
      // Gone between the 409 and the read: create again, within the same bound.
      if (!isKubeStatus(err, 404)) throw err;
      if (clock.now() >= deadline) throw busy();
      continue;
    }
    if (!isTerminating(found)) return;
    logger.info(`${kind.toLowerCase()} is being deleted; waiting for it to go`, { name });
    if (!(await goneBy(options, read, deadline))) throw busy();
  }
}

/** Reads until the object is gone (404) or the deadline passes; read failures are waited out. */
export async function goneBy(
  options: Pick<CreateOrAwaitOptions, 'clock' | 'pollIntervalMs'>,
  read: () => Promise<unknown>,
  deadline: number,
): Promise<boolean> {
  for (;;) {
    try {
      await read();
    } catch (err) {
      if (isKubeStatus(err, 404)) return true;
    }
    if (options.clock.now() >= deadline) return false;
    await sleep(options.pollIntervalMs, { clock: options.clock });
  }
}
