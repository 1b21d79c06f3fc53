import { InvalidArgumentError } from '../errors/errors.js';

/**
 * How far one acquire's spec may go. Two tiers:
 *
 * - **Defaults** (`DEFAULT_SPEC_MAXIMA`): the most an acquire may ask for while the operator set no
 *   `sandbox.spec.max_*`. They are the hardened limits a sandbox gets without a spec (AIO's
 *   container defaults: 4 GiB, 2 CPUs, 1,024 processes; E2B's idle timeout), so an unconfigured
 *   deployment admits specs that narrow the hardened sandbox, never ones that widen it: a tenant
 *   cannot lift the pids limit a fork bomb stops at by asking for 2^31.
 * - **Ceilings** (`SPEC_CEILINGS`): past these no configuration goes. They are beyond any real
 *   machine (or past the longest timer Node accepts), so a value over them is a mistake or an
 *   attack, and a provider's API would otherwise receive `1e300` megabytes.
 */
export interface SpecMaxima {
  readonly memoryMb: number;
  readonly cpus: number;
  readonly pids: number;
  readonly diskGb: number;
  readonly timeoutSeconds: number;
}

export const DEFAULT_SPEC_MAXIMA: SpecMaxima = Object.freeze({
  memoryMb: 4096,
  cpus: 2,
  pids: 1024,
  diskGb: 10,
  timeoutSeconds: 1800,
});

export const SPEC_CEILINGS: SpecMaxima = Object.freeze({
  /** 1 TiB. */
  memoryMb: 1_048_576,
  cpus: 512,
  /** Linux's `PID_MAX_LIMIT` on 64-bit. */
  pids: 4_194_304,
  /** 64 TiB. */
  diskGb: 65_536,
  /** The longest timer Node accepts (`MAX_TIMER_SECONDS` of the configuration). */
  timeoutSeconds: 2_147_483,
});

/** The smallest CPU share an acquire may ask for: engines refuse less (Docker: 0.01). */
export const MIN_SPEC_CPUS = 0.01;

/** The operator's `max_*` (each optional) as the policy of `sandbox-spec.ts` carries them. */
export interface ConfiguredSpecMaxima {
  readonly maxMemoryMb?: number | undefined;
  readonly maxCpus?: number | undefined;
  readonly maxPids?: number | undefined;
  readonly maxDiskGb?: number | undefined;
  readonly maxTimeoutSeconds?: number | undefined;
}

/**
 * The bound of each field for one policy: the configured maximum, else the hardened default; never
 * past the ceiling (a policy built in code skips the configuration schema that enforces it).
 *
 * @throws InvalidArgumentError for a configured maximum that is not a positive number
 */
export function effectiveSpecMaxima(policy: ConfiguredSpecMaxima): SpecMaxima {
  const pick = (configured: number | undefined, name: keyof SpecMaxima): number => {
    if (configured === undefined) return DEFAULT_SPEC_MAXIMA[name];
    // `NaN > max` is false for every value: a NaN bound would admit everything.
    if (typeof configured !== 'number' || !(configured > 0)) {
      throw new InvalidArgumentError(
        `the configured maximum of spec ${name} must be a positive number, got ${String(configured)}`,
      );
    }
    return Math.min(configured, SPEC_CEILINGS[name]);
  };
  return {
    memoryMb: pick(policy.maxMemoryMb, 'memoryMb'),
    cpus: pick(policy.maxCpus, 'cpus'),
    pids: pick(policy.maxPids, 'pids'),
    diskGb: pick(policy.maxDiskGb, 'diskGb'),
    timeoutSeconds: pick(policy.maxTimeoutSeconds, 'timeoutSeconds'),
  };
}

/** What a provider gives a sandbox without a spec (its configured limits), each optional. */
export interface SpecBaseline {
  readonly memoryMb?: number | undefined;
  readonly cpus?: number | undefined;
  readonly pids?: number | undefined;
  readonly diskGb?: number | undefined;
}

/**
 * `policy` with each absent resource maximum set to the provider's own limit for a sandbox without
 * a spec, so that without `sandbox.spec.max_*` a spec only narrows the sandbox this provider hands
 * out, also where the operator configured limits below the hardened defaults (a container limited
 * to 256 processes must not be lifted to 1,024 by a spec). A configured maximum is kept as it is;
 * a baseline that is not a positive number (unlimited, unset) leaves the hardened default.
 */
export function specPolicyWithin<T extends ConfiguredSpecMaxima>(
  policy: T,
  baseline: SpecBaseline,
): T & ConfiguredSpecMaxima {
  const own = (value: number | undefined): number | undefined =>
    typeof value === 'number' && value > 0 ? value : undefined;
  return {
    ...policy,
    maxMemoryMb: policy.maxMemoryMb ?? own(baseline.memoryMb),
    maxCpus: policy.maxCpus ?? own(baseline.cpus),
    maxPids: policy.maxPids ?? own(baseline.pids),
    maxDiskGb: policy.maxDiskGb ?? own(baseline.diskGb),
  };
}
