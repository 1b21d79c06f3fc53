import { type ConfigBlockValidator } from '@sbx/core';
import {
  DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_REPLICAS,
} from '@sbx/core/provider-kit';
import { collectConfigIssues } from '@sbx/core/internal';
import { ConfigError, DEFAULT_SKILLS_CONTAINER_PATH, validateExtraEnv } from '@sbx/core';
import { normalizeVirtualRoot, unknownKeyIssues } from '@sbx/core/internal';
import type { ConfigIssue, SandboxConfig } from '@sbx/core';

/** Image used when neither `sandbox.boxlite.image` nor `sandbox.image` names one. */
export const DEFAULT_BOXLITE_IMAGE = 'python:3.12-slim';
/** Boxes are named `<prefix><sandbox id>`; startup reconciliation adopts only this prefix. */
export const DEFAULT_BOX_NAME_PREFIX = 'sbx-boxlite-';
/** The prefix the Python reference uses; set `name_prefix` to it to adopt that deployment's boxes. */
export const REFERENCE_BOX_NAME_PREFIX = 'deer-flow-boxlite-';
/** Seconds a reuse health check may take, both inside the VM and for the caller's wait. */
export const DEFAULT_HEALTH_CHECK_TIMEOUT_SECONDS = 5;

/** Everything the provider reads from configuration, resolved and validated. */
export interface BoxliteSettings {
  readonly image: string;
  readonly rootfsPath: string | undefined;
  readonly memoryMib: number | undefined;
  readonly cpus: number | undefined;
  readonly diskSizeGb: number | undefined;
  /** The BoxLite home (image cache, box state); the SDK default (`~/.boxlite`) when absent. */
  readonly homeDir: string | undefined;
  readonly namePrefix: string;
  readonly environment: Readonly<Record<string, string>>;
  readonly replicas: number;
  readonly idleTimeoutSeconds: number;
  readonly idleCheckIntervalSeconds: number;
  readonly healthCheckSkipSeconds: number;
  readonly healthCheckTimeoutSeconds: number;
  /** Default wall clock of a command; `undefined` waits indefinitely. */
  readonly commandTimeoutSeconds: number | undefined;
  readonly skillsContainerPath: string;
}

/** The `sandbox.boxlite` keys this package understands (snake_case, as written in YAML). */
export const BOXLITE_BLOCK_KEYS = [
  'image',
  'rootfs_path',
  'memory_mib',
  'cpus',
  'disk_size_gb',
  'home_dir',
  'name_prefix',
  'health_check_timeout_seconds',
  'command_timeout_seconds',
] as const;

const NAME_PREFIX_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

class Reader {
  readonly issues: ConfigIssue[] = [];
  constructor(private readonly block: Readonly<Record<string, unknown>>) {
    this.issues.push(...unknownKeyIssues('sandbox.boxlite', block, BOXLITE_BLOCK_KEYS));
  }

  string(key: string, check?: (v: string) => string | undefined): string | undefined {
    const value = this.block[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string' || value === '') {
      this.issues.push({ path: `sandbox.boxlite.${key}`, message: 'must be a non-empty string' });
      return undefined;
    }
    const problem = check?.(value);
    if (problem) this.issues.push({ path: `sandbox.boxlite.${key}`, message: problem });
    return value;
  }

  number(key: string, kind: 'positive-integer' | 'positive'): number | undefined {
    const value = this.block[key];
    if (value === undefined || value === null) return undefined;
    const ok =
      typeof value === 'number' &&
      Number.isFinite(value) &&
      value > 0 &&
      (kind === 'positive' || Number.isSafeInteger(value));
    if (!ok) {
      this.issues.push({
        path: `sandbox.boxlite.${key}`,
        message: `must be a ${kind === 'positive' ? 'positive number' : 'positive integer'}, got ${JSON.stringify(value)}`,
      });
      return undefined;
    }
    return value as number;
  }
}

/**
 * Reads the provider's settings from a parsed `sandbox:` section: the shared keys (`image`,
 * `replicas`, `idle_timeout`, `health_check_skip_seconds`, `environment`, `warm_pool`,
 * `skills.container_path`) and the `sandbox.boxlite` block.
 *
 * @throws ConfigError listing every problem at once
 */
export function resolveBoxliteSettings(config: SandboxConfig | undefined): BoxliteSettings {
  const reader = new Reader(config?.boxlite ?? {});
  const image = reader.string('image') ?? config?.image ?? DEFAULT_BOXLITE_IMAGE;
  const rootfsPath = reader.string('rootfs_path', (v) =>
    v.startsWith('/') ? undefined : 'must be an absolute path to an OCI layout directory',
  );
  const homeDir = reader.string('home_dir', (v) =>
    v.startsWith('/') ? undefined : 'must be an absolute path',
  );
  const namePrefix =
    reader.string('name_prefix', (v) =>
      NAME_PREFIX_RE.test(v) ? undefined : 'must match [A-Za-z0-9][A-Za-z0-9_.-]*',
    ) ?? DEFAULT_BOX_NAME_PREFIX;
  const memoryMib = reader.number('memory_mib', 'positive-integer');
  const cpus = reader.number('cpus', 'positive-integer');
  const diskSizeGb = reader.number('disk_size_gb', 'positive-integer');
  const healthCheckTimeoutSeconds =
    reader.number('health_check_timeout_seconds', 'positive') ??
    DEFAULT_HEALTH_CHECK_TIMEOUT_SECONDS;
  const commandTimeoutSeconds =
    reader.number('command_timeout_seconds', 'positive') ?? config?.bashCommandTimeout;

  const environment = config?.environment ?? {};
  try {
    validateExtraEnv(environment);
  } catch (error) {
    reader.issues.push({ path: 'sandbox.environment', message: (error as Error).message });
  }
  if (reader.issues.length > 0) {
    throw new ConfigError(reader.issues, 'Invalid BoxLite sandbox configuration');
  }
  return {
    image,
    rootfsPath,
    memoryMib,
    cpus,
    diskSizeGb,
    homeDir,
    namePrefix,
    environment: { ...environment },
    replicas: config?.replicas ?? DEFAULT_REPLICAS,
    idleTimeoutSeconds: config?.idleTimeout ?? DEFAULT_IDLE_TIMEOUT_SECONDS,
    idleCheckIntervalSeconds:
      config?.warmPool.idleCheckIntervalSeconds ?? DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
    healthCheckSkipSeconds: config?.healthCheckSkipSeconds ?? 0,
    healthCheckTimeoutSeconds,
    commandTimeoutSeconds,
    skillsContainerPath: normalizeVirtualRoot(
      config?.skills.containerPath ?? DEFAULT_SKILLS_CONTAINER_PATH,
    ),
  };
}

/** `sbx config validate` for `sandbox.boxlite`: unknown keys (with did-you-mean) and bad values. */
export const validateConfigBlock: ConfigBlockValidator = (config) =>
  collectConfigIssues(() => resolveBoxliteSettings(config));
