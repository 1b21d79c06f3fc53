import { AbortedError, SandboxNotFoundError, SandboxRuntimeError } from '@sbx/core';
import type { Logger } from '@sbx/core';
import { dockerErrorText, dockerStatusCode } from './docker-client.js';
import type { DockerClient } from './docker-client.js';
import type { BackendCallOptions } from './sandbox-backend.js';
import type { SandboxInfo } from './sandbox-info.js';

/** Whole-call bound of a pause or an unpause (the engine answers at once; a hang is a fault). */
export const DEFAULT_PAUSE_TIMEOUT_MS = 30_000;

export type PauseDirection = 'pause' | 'unpause';

/**
 * The engine's answer when the container is already where the call would put it: `Container … is
 * already paused` / `is not paused` (HTTP 409, and 500 on some engines). Two instances resuming one
 * sandbox at once both succeed; the second finds nothing to do.
 */
function alreadyThere(direction: PauseDirection, err: unknown): boolean {
  const text = dockerErrorText(err).toLowerCase();
  return direction === 'pause' ? text.includes('already paused') : text.includes('is not paused');
}

/**
 * `docker pause` / `docker unpause` of a sandbox's container (the cgroup freezer: its processes
 * are kept, suspended). Idempotent in both directions; a container that is gone is
 * `SandboxNotFoundError`, anything else `SandboxRuntimeError` (never swallowed).
 */
export async function setContainerPaused(
  docker: DockerClient,
  target: string,
  info: SandboxInfo,
  direction: PauseDirection,
  options: BackendCallOptions & { timeoutMs?: number; logger: Logger },
): Promise<void> {
  const deadline = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_PAUSE_TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const container = docker.getContainer(target);
  try {
    await (direction === 'pause'
      ? container.pause({ abortSignal: signal })
      : container.unpause({ abortSignal: signal }));
  } catch (err) {
    if (alreadyThere(direction, err)) {
      options.logger.debug(`Sandbox container already ${direction}d`, { container: target });
      return;
    }
    if (options.signal?.aborted) {
      throw new AbortedError(`The ${direction} of the sandbox was aborted`, {
        cause: options.signal.reason,
      });
    }
    if (dockerStatusCode(err) === 404) {
      throw new SandboxNotFoundError(`Sandbox container ${target} is gone`, info.sandboxId, {
        cause: err,
      });
    }
    throw new SandboxRuntimeError(
      `Failed to ${direction} container ${target}: ${dockerErrorText(err)}`,
      { cause: err, details: { sandbox_id: info.sandboxId } },
    );
  }
}
