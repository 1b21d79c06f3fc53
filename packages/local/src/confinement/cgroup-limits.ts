import { InvalidArgumentError } from '@sbx/core';

/**
 * What one sandbox may use. Enforced by the sandbox's cgroup where the host offers the controller
 * (see `detectCgroups`), and per process by rlimits as the floor (see `rlimitArgv`); `tmpBytes`
 * is the size of the sandbox's private `/tmp` (a tmpfs the launcher mounts).
 */
export interface ConfinementLimits {
  /** Processes and threads of the sandbox together (cgroup `pids`; rlimit `nproc` per user). */
  readonly pids: number;
  /** Memory of the sandbox together, swap included where the host accounts it. */
  readonly memoryBytes: number;
  /** CPU time per wall-clock second, in thousandths of a core (1000 = one core). */
  readonly cpuMillicores: number;
  /** Size of the private `/tmp`. */
  readonly tmpBytes: number;
  /** Largest file one process may write (rlimit `fsize`). */
  readonly fileSizeBytes: number;
}

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

/**
 * Non-zero defaults: a build or a test run fits, a fork bomb or a memory hog stops long before it
 * can starve the gateway or another tenant of a small (2-core, few-GiB) host.
 */
export const DEFAULT_CONFINEMENT_LIMITS: ConfinementLimits = Object.freeze({
  pids: 512,
  memoryBytes: 2 * GIB,
  cpuMillicores: 1000,
  tmpBytes: 512 * MIB,
  fileSizeBytes: 4 * GIB,
});

/**
 * Bounds of each limit. The lower bounds keep a shell able to start; the upper ones keep every
 * value an exact integer the kernel files and `prlimit` accept.
 */
export const CONFINEMENT_LIMIT_BOUNDS: Readonly<
  Record<keyof ConfinementLimits, { readonly min: number; readonly max: number }>
> = Object.freeze({
  pids: { min: 8, max: 4_194_304 },
  memoryBytes: { min: 16 * MIB, max: 2 ** 50 },
  cpuMillicores: { min: 10, max: 1_024_000 },
  tmpBytes: { min: MIB, max: 2 ** 50 },
  fileSizeBytes: { min: MIB, max: 2 ** 50 },
});

/** Why one limit is refused: the key and a sentence (the config layer turns it into a key path). */
export interface LimitIssue {
  readonly key: keyof ConfinementLimits;
  readonly message: string;
}

/** The issues of a set of limits; empty when every value is an integer within its bounds. */
export function confinementLimitIssues(limits: Partial<ConfinementLimits>): LimitIssue[] {
  const issues: LimitIssue[] = [];
  for (const key of Object.keys(CONFINEMENT_LIMIT_BOUNDS) as (keyof ConfinementLimits)[]) {
    const value: unknown = limits[key];
    if (value === undefined) continue;
    const { min, max } = CONFINEMENT_LIMIT_BOUNDS[key];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
      issues.push({
        key,
        message: `must be an integer from ${min} to ${max}, got ${String(value)}`,
      });
    }
  }
  return issues;
}

/**
 * The defaults overridden by `limits`, checked: the one place the numbers that reach cgroup files
 * and rlimit arguments are validated.
 *
 * @throws InvalidArgumentError naming every value outside its bounds
 */
export function resolveConfinementLimits(
  limits: Partial<ConfinementLimits> = {},
): ConfinementLimits {
  const issues = confinementLimitIssues(limits);
  if (issues.length > 0) {
    throw new InvalidArgumentError(
      `Invalid confinement limits: ${issues.map((i) => `${i.key} ${i.message}`).join('; ')}`,
    );
  }
  const pick = <K extends keyof ConfinementLimits>(key: K): number =>
    limits[key] ?? DEFAULT_CONFINEMENT_LIMITS[key];
  return Object.freeze({
    pids: pick('pids'),
    memoryBytes: pick('memoryBytes'),
    cpuMillicores: pick('cpuMillicores'),
    tmpBytes: pick('tmpBytes'),
    fileSizeBytes: pick('fileSizeBytes'),
  });
}

const SIZE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1024,
  kib: 1024,
  m: MIB,
  mib: MIB,
  g: GIB,
  gib: GIB,
  t: 1024 * GIB,
  tib: 1024 * GIB,
};

/**
 * A size as configured: a byte count, or a string such as `512MiB`, `2 GiB`, `1.5G` (binary
 * units). Undefined for anything else (the caller reports the key path).
 */
export function parseByteSize(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  // Bounded before the pattern runs: a size is never longer than this.
  if (typeof value !== 'string' || value.length > 32) return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(value);
  if (!match) return undefined;
  const unit = SIZE_UNITS[(match[2] ?? '').toLowerCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.floor(Number(match[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
