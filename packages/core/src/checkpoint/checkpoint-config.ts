import type { CheckpointConfig } from '../config/config.js';
import type { CheckpointLimits } from './checkpoint-format.js';

/**
 * The checkpoint limits `sandbox.checkpoint` configures (absent: the defaults). `max_bytes` bounds
 * both the sum of the file sizes and the largest file, as the defaults do.
 */
export function checkpointLimitsOf(
  config: CheckpointConfig | undefined,
): Partial<CheckpointLimits> {
  if (config === undefined) return {};
  return {
    maxTotalBytes: config.maxTotalBytes,
    maxEntryBytes: config.maxTotalBytes,
    maxEntries: config.maxEntries,
  };
}
