import { ConfigError, type ConfigBlockValidator, type ConfigIssue } from '@sbx/core';
import { collectConfigIssues, unknownKeyIssues } from '@sbx/core/internal';

export const DEFAULT_MAX_CACHED_THREAD_SANDBOXES = 256;
/** Thread directories untouched this long are what `reapOrphans` (`sbx gc`) removes. */
export const DEFAULT_THREAD_MAX_AGE_DAYS = 30;

/** The keys of `sandbox.local`. */
export const LOCAL_BLOCK_KEYS = ['shell', 'max_cached_threads', 'thread_max_age_days'] as const;

/** `sandbox.local`, checked. */
export interface LocalBlockSettings {
  readonly shell: string | undefined;
  readonly maxCachedThreads: number | undefined;
  readonly threadMaxAgeDays: number | undefined;
}

function positiveInteger(issues: ConfigIssue[], key: string, value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    issues.push({
      path: `sandbox.local.${key}`,
      message: `must be a positive integer, got ${String(value)}`,
    });
    return undefined;
  }
  return value;
}

function positiveNumber(issues: ConfigIssue[], key: string, value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    issues.push({
      path: `sandbox.local.${key}`,
      message: `must be a positive number, got ${String(value)}`,
    });
    return undefined;
  }
  return value;
}

/**
 * Reads `sandbox.local`: every invalid value is a `ConfigError` issue at its key path. Unknown keys
 * are left to `validateConfigBlock` (the provider itself ignores them, as the other providers warn
 * rather than fail on them).
 */
export function resolveLocalBlock(
  block: Readonly<Record<string, unknown>> | undefined,
): LocalBlockSettings {
  const raw = block ?? {};
  const issues: ConfigIssue[] = [];
  let shell: string | undefined;
  if (raw.shell !== undefined && raw.shell !== null) {
    if (typeof raw.shell !== 'string' || raw.shell === '') {
      issues.push({ path: 'sandbox.local.shell', message: 'must be a non-empty string' });
    } else shell = raw.shell;
  }
  const settings = {
    shell,
    maxCachedThreads: positiveInteger(issues, 'max_cached_threads', raw.max_cached_threads),
    threadMaxAgeDays: positiveNumber(issues, 'thread_max_age_days', raw.thread_max_age_days),
  };
  if (issues.length > 0) throw new ConfigError(issues, 'Invalid sandbox.local configuration');
  return settings;
}

/** `sbx config validate` for `sandbox.local`: unknown keys (with did-you-mean) and bad values. */
export const validateConfigBlock: ConfigBlockValidator = (config) => {
  const block = (config as { local?: Readonly<Record<string, unknown>> }).local;
  return [
    ...unknownKeyIssues('sandbox.local', block, LOCAL_BLOCK_KEYS),
    ...collectConfigIssues(() => resolveLocalBlock(block)),
  ];
};
