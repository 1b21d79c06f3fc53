import { type ConfigBlockValidator } from '@sbx/core';
import {
  DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_REPLICAS,
} from '@sbx/core/provider-kit';
import { collectConfigIssues } from '@sbx/core/internal';
import { ConfigError, validateExtraEnv } from '@sbx/core';
import { unknownKeyIssues } from '@sbx/core/internal';
import type { ConfigIssue, SandboxConfig } from '@sbx/core';

/** Hard cap on a sandbox's lifetime asked of Tenki: 4 hours (0 = the account default, ~30 min). */
export const DEFAULT_MAX_DURATION_SECONDS = 14_400;
/** HOME of the unprivileged `tenki` user; `/mnt/user-data` lives here. */
export const DEFAULT_TENKI_HOME_DIR = '/home/tenki';
/** Sandboxes are named `<prefix><sandbox id>`. */
export const DEFAULT_TENKI_NAME_PREFIX = 'sbx-tenki-';
/** The prefix the Python reference uses. */
export const REFERENCE_TENKI_NAME_PREFIX = 'deer-flow-tenki-';
/** Seconds a reuse liveness check may take (inside the VM and for the caller's wait). */
export const DEFAULT_TENKI_HEALTH_CHECK_TIMEOUT_SECONDS = 10;
/** Seconds the best-effort bootstrap command may take. */
export const TENKI_BOOTSTRAP_TIMEOUT_SECONDS = 30;
/** Seconds to wait for a new sandbox to become ready. */
export const DEFAULT_TENKI_READY_TIMEOUT_SECONDS = 180;

export interface TenkiSettings {
  readonly apiKey: string | undefined;
  readonly baseUrl: string | undefined;
  readonly image: string | undefined;
  readonly workspaceId: string | undefined;
  readonly cpuCores: number | undefined;
  readonly memoryMb: number | undefined;
  /** 0: omitted from the create call (account default). */
  readonly maxDurationSeconds: number;
  readonly sticky: boolean;
  readonly homeDir: string;
  readonly namePrefix: string;
  /** Module to import for a client when none is injected. */
  readonly clientModule: string | undefined;
  readonly environment: Readonly<Record<string, string>>;
  readonly replicas: number;
  readonly idleTimeoutSeconds: number;
  readonly idleCheckIntervalSeconds: number;
  readonly healthCheckTimeoutSeconds: number;
  readonly readyTimeoutSeconds: number;
  /** Default wall clock of a command; `undefined` waits indefinitely. */
  readonly commandTimeoutSeconds: number | undefined;
}

/** The `sandbox.tenki` keys this package understands. */
export const TENKI_BLOCK_KEYS = [
  'api_key',
  'base_url',
  'image',
  'workspace_id',
  'cpu_cores',
  'memory_mb',
  'max_duration',
  'sticky',
  'home_dir',
  'name_prefix',
  'client_module',
  'health_check_timeout_seconds',
  'ready_timeout_seconds',
  'command_timeout_seconds',
] as const;

const NAME_PREFIX_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

function at(key: string): string {
  return `sandbox.tenki.${key}`;
}

/**
 * The provider's settings from a parsed `sandbox:` section: shared keys (`replicas`,
 * `idle_timeout`, `environment`, `warm_pool`, `image`) and the `sandbox.tenki` block.
 *
 * @throws ConfigError listing every problem at once
 */
export function resolveTenkiSettings(config: SandboxConfig | undefined): TenkiSettings {
  const block = config?.tenki ?? {};
  const issues: ConfigIssue[] = [];
  issues.push(...unknownKeyIssues('sandbox.tenki', block, TENKI_BLOCK_KEYS));
  const string = (key: string, check?: (v: string) => string | undefined): string | undefined => {
    const value = block[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string' || value === '') {
      issues.push({ path: at(key), message: 'must be a non-empty string' });
      return undefined;
    }
    const problem = check?.(value);
    if (problem) issues.push({ path: at(key), message: problem });
    return value;
  };
  const number = (key: string, min: 0 | 1, integer: boolean): number | undefined => {
    const value = block[key];
    if (value === undefined || value === null) return undefined;
    if (
      typeof value !== 'number' ||
      !Number.isFinite(value) ||
      value < min ||
      (min === 1 && value <= 0) ||
      (integer && !Number.isSafeInteger(value))
    ) {
      issues.push({
        path: at(key),
        message: `must be a ${min === 0 ? 'non-negative' : 'positive'} ${integer ? 'integer' : 'number'}, got ${JSON.stringify(value)}`,
      });
      return undefined;
    }
    return value;
  };
  const stickyValue = block.sticky;
  if (stickyValue !== undefined && stickyValue !== null && typeof stickyValue !== 'boolean') {
    issues.push({ path: at('sticky'), message: 'must be true or false' });
  }
  const absolute = (v: string) => (v.startsWith('/') ? undefined : 'must be an absolute path');

  const settings = {
    apiKey: string('api_key'),
    baseUrl: string('base_url'),
    image: string('image') ?? config?.image,
    workspaceId: string('workspace_id'),
    cpuCores: number('cpu_cores', 1, true),
    memoryMb: number('memory_mb', 1, true),
    maxDurationSeconds: number('max_duration', 0, true) ?? DEFAULT_MAX_DURATION_SECONDS,
    sticky: stickyValue === true,
    homeDir: (string('home_dir', absolute) ?? DEFAULT_TENKI_HOME_DIR).replace(/(.)\/+$/, '$1'),
    namePrefix:
      string('name_prefix', (v) =>
        NAME_PREFIX_RE.test(v) ? undefined : 'must match [A-Za-z0-9][A-Za-z0-9_.-]*',
      ) ?? DEFAULT_TENKI_NAME_PREFIX,
    clientModule: string('client_module'),
    healthCheckTimeoutSeconds:
      number('health_check_timeout_seconds', 1, false) ??
      DEFAULT_TENKI_HEALTH_CHECK_TIMEOUT_SECONDS,
    readyTimeoutSeconds:
      number('ready_timeout_seconds', 1, false) ?? DEFAULT_TENKI_READY_TIMEOUT_SECONDS,
    commandTimeoutSeconds:
      number('command_timeout_seconds', 1, false) ?? config?.bashCommandTimeout,
  };
  const environment = config?.environment ?? {};
  try {
    validateExtraEnv(environment);
  } catch (error) {
    issues.push({ path: 'sandbox.environment', message: (error as Error).message });
  }
  if (issues.length > 0) throw new ConfigError(issues, 'Invalid Tenki sandbox configuration');
  return {
    ...settings,
    environment: { ...environment },
    replicas: config?.replicas ?? DEFAULT_REPLICAS,
    idleTimeoutSeconds: config?.idleTimeout ?? DEFAULT_IDLE_TIMEOUT_SECONDS,
    idleCheckIntervalSeconds:
      config?.warmPool.idleCheckIntervalSeconds ?? DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
  };
}

/** `sbx config validate` for `sandbox.tenki`: unknown keys (with did-you-mean) and bad values. */
export const validateConfigBlock: ConfigBlockValidator = (config) =>
  collectConfigIssues(() => resolveTenkiSettings(config));
