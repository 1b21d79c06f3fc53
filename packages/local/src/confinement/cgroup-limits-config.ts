import type { ConfigIssue } from '@sbx/core';
import { unknownKeyIssues } from '@sbx/core/internal';
import {
  CONFINEMENT_LIMIT_BOUNDS,
  parseByteSize,
  resolveConfinementLimits,
  type ConfinementLimits,
} from './cgroup-limits.js';

/** The keys of `sandbox.local.limits`. */
export const LIMITS_BLOCK_KEYS = ['pids', 'memory', 'cpu', 'tmp_size', 'file_size'] as const;

const PATH = 'sandbox.local.limits';

type Key = (typeof LIMITS_BLOCK_KEYS)[number];

const FIELD: Readonly<Record<Key, keyof ConfinementLimits>> = {
  pids: 'pids',
  memory: 'memoryBytes',
  cpu: 'cpuMillicores',
  tmp_size: 'tmpBytes',
  file_size: 'fileSizeBytes',
};

function isBlock(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function bounds(key: Key): string {
  const { min, max } = CONFINEMENT_LIMIT_BOUNDS[FIELD[key]];
  if (key === 'pids') return `from ${min} to ${max}`;
  if (key === 'cpu') return `from ${min / 1000} to ${max / 1000} cores`;
  return `from ${min} to ${max} bytes`;
}

/** One configured value in the unit `ConfinementLimits` holds, or an issue at its key path. */
function readValue(key: Key, value: unknown, issues: ConfigIssue[]): number | undefined {
  if (value === undefined || value === null) return undefined;
  let read: number | undefined;
  if (key === 'pids') read = typeof value === 'number' ? value : undefined;
  else if (key === 'cpu') {
    // Cores, fractions allowed (0.5); held as millicores.
    read =
      typeof value === 'number' && Number.isFinite(value) ? Math.round(value * 1000) : undefined;
  } else read = parseByteSize(value);
  const field = FIELD[key];
  const { min, max } = CONFINEMENT_LIMIT_BOUNDS[field];
  if (read === undefined || !Number.isSafeInteger(read) || read < min || read > max) {
    const form =
      key === 'pids'
        ? 'an integer'
        : key === 'cpu'
          ? 'a number of cores'
          : 'a size (bytes, or e.g. "512MiB", "2GiB")';
    issues.push({
      path: `${PATH}.${key}`,
      message: `must be ${form} ${bounds(key)}, got ${JSON.stringify(value) ?? String(value)}`,
    });
    return undefined;
  }
  return read;
}

/**
 * `sandbox.local.limits`, checked: the defaults overridden by each configured value. Every bad value
 * is pushed to `issues` at its key path (the caller raises them together); unknown keys are left to
 * `limitsUnknownKeyIssues`, as the block's other unknown keys are.
 */
export function resolveLimitsBlock(block: unknown, issues: ConfigIssue[]): ConfinementLimits {
  if (block === undefined || block === null) return resolveConfinementLimits();
  if (!isBlock(block)) {
    issues.push({
      path: PATH,
      message: 'must be a mapping of pids, memory, cpu, tmp_size, file_size',
    });
    return resolveConfinementLimits();
  }
  const limits: { -readonly [K in keyof ConfinementLimits]?: number } = {};
  for (const key of LIMITS_BLOCK_KEYS) {
    const value = readValue(key, block[key], issues);
    if (value !== undefined) limits[FIELD[key]] = value;
  }
  return resolveConfinementLimits(limits);
}

/** `sbx config validate`: keys of `sandbox.local.limits` that do not exist, with did-you-mean. */
export function limitsUnknownKeyIssues(block: unknown): ConfigIssue[] {
  return isBlock(block) ? unknownKeyIssues(PATH, block, LIMITS_BLOCK_KEYS) : [];
}
