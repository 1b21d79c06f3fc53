import { silentLogger } from '@sbx/core';
import type { Logger } from '@sbx/core';

/**
 * The logger used when the host passes none. Silent except for warnings and errors: the gate and
 * the tool filter must say when they fail open or closed because a provider could not decide,
 * otherwise a broken policy backend would go unnoticed.
 */
export const requiredWarningsLogger: Logger = {
  debug: silentLogger.debug,
  info: silentLogger.info,
  warn: (msg, fields) => (fields ? console.warn(msg, fields) : console.warn(msg)),
  error: (msg, fields) => (fields ? console.error(msg, fields) : console.error(msg)),
};

export function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
