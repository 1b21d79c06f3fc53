import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@sbx/core';
import { dockerErrorText } from './docker-client.js';
import type { DockerClient } from './docker-client.js';

/**
 * Waits, bounded by `signal`, until a container stopped with AutoRemove is gone. The engine removes
 * it a moment after the stop returned; until then its name is taken, so a create of the same
 * sandbox — here, or on a peer as soon as the teardown marker is released — fails with a name
 * conflict. A teardown that ends only once the name is free closes that gap. A container found
 * running again (not the one stopped) or made without AutoRemove is not waited for, and a wait
 * that runs out is logged, never thrown: the stop itself succeeded.
 */
export async function awaitContainerRemoval(
  docker: DockerClient,
  target: string,
  signal: AbortSignal,
  isMissing: (err: unknown) => boolean,
  logger: Logger,
): Promise<void> {
  for (let delay = 20; !signal.aborted; delay = Math.min(delay * 2, 250)) {
    try {
      const info = await docker.getContainer(target).inspect({ abortSignal: signal });
      // Running again: not the one stopped. Without AutoRemove: nothing will remove it.
      if (info.State?.Running || info.HostConfig?.AutoRemove !== true) return;
    } catch (err) {
      if (isMissing(err)) return;
      if (!signal.aborted) {
        logger.warn('Could not see whether a stopped sandbox container is removed', {
          container: target,
          error: dockerErrorText(err),
        });
        return;
      }
      break;
    }
    try {
      await sleep(delay, undefined, { signal });
    } catch {
      break;
    }
  }
  logger.warn('A stopped sandbox container was not removed in time; its name stays taken', {
    container: target,
  });
}
