import type { OutputListener } from '../contract/sandbox-exec.js';
import type { Logger } from '../logging/logger.js';

/**
 * A caller's output listener as a backend's callback. A listener that throws is the caller's bug:
 * it must not abort the backend's stream (and with it the command), so it is logged once and
 * not called again. `undefined` when there is no listener, so the backend is not asked to stream.
 */
export function guardedListener(
  listener: OutputListener | undefined,
  logger: Logger,
  sandboxId: string,
): OutputListener | undefined {
  if (listener === undefined) return undefined;
  let live: OutputListener | undefined = listener;
  return (text) => {
    try {
      live?.(text);
    } catch (error) {
      live = undefined;
      logger.warn('a command output listener threw; it gets no more output', {
        sandboxId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };
}
