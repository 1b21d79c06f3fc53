import type { Clock } from '../async/clock.js';
import type { Logger } from '../logging/logger.js';
import { withDeadline } from '../async/with-deadline.js';

export interface BoundedHealthCheckOptions {
  /** The limit for the whole check; the probe should also hand it to the remote call. */
  readonly timeoutSeconds: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Names the check in its warnings: `<name> timed out`, `<name> failed`. */
  readonly name: string;
  readonly sandboxId: string;
}

/**
 * Asks `probe` whether a sandbox answers, waiting no longer than `timeoutSeconds`. A VM that stops
 * answering altogether would otherwise hold the caller, and the per-thread acquire lock it holds,
 * indefinitely; at the deadline the probe's signal is aborted and the check fails on time. Never
 * throws: a timeout or a failed probe is a warning and `false`, which callers treat as "replace it".
 */
export async function boundedHealthCheck(
  probe: (signal: AbortSignal) => Promise<boolean>,
  options: BoundedHealthCheckOptions,
): Promise<boolean> {
  const { timeoutSeconds, logger, name, sandboxId } = options;
  const controller = new AbortController();
  try {
    const outcome = await withDeadline(probe(controller.signal), {
      clock: options.clock,
      ms: timeoutSeconds * 1000,
      controller,
      logger,
      label: 'health check',
    });
    if (outcome.timedOut) {
      logger.warn(`${name} timed out`, { sandboxId, timeoutSeconds });
      return false;
    }
    return outcome.value;
  } catch (error) {
    logger.warn(`${name} failed`, { sandboxId, error });
    return false;
  }
}
