import { ConfigError, type ConfigBlockValidator, type ConfigIssue } from '@sbx/core';
import { collectConfigIssues, unknownKeyIssues } from '@sbx/core/internal';
import {
  ISOLATION_MODES,
  isIsolationMode,
  type IsolationMode,
} from './confinement/isolation-mode.js';
import type { ConfinementLimits } from './confinement/cgroup-limits.js';
import { limitsUnknownKeyIssues, resolveLimitsBlock } from './confinement/cgroup-limits-config.js';

export const DEFAULT_MAX_CACHED_THREAD_SANDBOXES = 256;
/** Thread directories untouched this long are what `reapOrphans` (`sbx gc`) removes. */
export const DEFAULT_THREAD_MAX_AGE_DAYS = 30;

/** The keys of `sandbox.local`. */
export const LOCAL_BLOCK_KEYS = [
  'shell',
  'max_cached_threads',
  'thread_max_age_days',
  'isolation',
  'sandbox_uid',
  'sandbox_gid',
  'limits',
] as const;

/** Largest id a user namespace can map (`(uid_t)-1` is "no id"). */
const MAX_ID = 2 ** 32 - 2;

/** `sandbox.local`, checked. */
export interface LocalBlockSettings {
  readonly shell: string | undefined;
  readonly maxCachedThreads: number | undefined;
  readonly threadMaxAgeDays: number | undefined;
  readonly isolation: IsolationMode | undefined;
  readonly sandboxUid: number | undefined;
  readonly sandboxGid: number | undefined;
  /** `limits`: the defaults overridden by each configured value. */
  readonly limits: ConfinementLimits;
}

/**
 * A host user or group id for confined commands: never 0, since a sandbox running as host root
 * would own every root-owned file bound into it.
 */
function unprivilegedId(issues: ConfigIssue[], key: string, value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_ID) {
    issues.push({
      path: `sandbox.local.${key}`,
      message: `must be an unprivileged id (an integer from 1 to ${MAX_ID}), got ${String(value)}`,
    });
    return undefined;
  }
  return value;
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
  let isolation: IsolationMode | undefined;
  if (raw.isolation !== undefined && raw.isolation !== null) {
    if (isIsolationMode(raw.isolation)) isolation = raw.isolation;
    else {
      issues.push({
        path: 'sandbox.local.isolation',
        message: `must be one of ${ISOLATION_MODES.join(', ')}, got ${String(raw.isolation)}`,
      });
    }
  }
  const settings = {
    shell,
    isolation,
    sandboxUid: unprivilegedId(issues, 'sandbox_uid', raw.sandbox_uid),
    sandboxGid: unprivilegedId(issues, 'sandbox_gid', raw.sandbox_gid),
    maxCachedThreads: positiveInteger(issues, 'max_cached_threads', raw.max_cached_threads),
    threadMaxAgeDays: positiveNumber(issues, 'thread_max_age_days', raw.thread_max_age_days),
    limits: resolveLimitsBlock(raw.limits, issues),
  };
  if (issues.length > 0) throw new ConfigError(issues, 'Invalid sandbox.local configuration');
  return settings;
}

/** `sbx config validate` for `sandbox.local`: unknown keys (with did-you-mean) and bad values. */
export const validateConfigBlock: ConfigBlockValidator = (config) => {
  const block = (config as { local?: Readonly<Record<string, unknown>> }).local;
  return [
    ...unknownKeyIssues('sandbox.local', block, LOCAL_BLOCK_KEYS),
    ...limitsUnknownKeyIssues(block?.limits),
    ...collectConfigIssues(() => resolveLocalBlock(block)),
  ];
};
