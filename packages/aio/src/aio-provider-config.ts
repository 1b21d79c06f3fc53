import { type ConfigBlockValidator } from '@sbx/core';
import {
  DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_REPLICAS,
} from '@sbx/core/provider-kit';
import { collectConfigIssues, unknownKeyIssues } from '@sbx/core/internal';
import { ConfigError, silentLogger } from '@sbx/core';
import { DEFAULT_SKILLS_ROOT } from '@sbx/core/internal';
import type { Logger, SandboxConfig } from '@sbx/core';
import type { ContainerNetworkMode } from './container-spec.js';
import {
  DEFAULT_AIO_IMAGE,
  DEFAULT_BASE_PORT,
  DEFAULT_CONTAINER_PREFIX,
} from './local-container-backend.js';
import { canonicalSkillsRoot } from '@sbx/core';
import { CREATE_READY_TIMEOUT_MS } from './readiness.js';
import type { MountSpec } from './sandbox-backend.js';
import {
  readLimits,
  readSecurity,
  type ContainerResources,
  type ContainerSecurityProfile,
} from './container-profile.js';

/** sbx's variable for the host-side base of bind-mount sources (Docker-outside-of-Docker). */
export const SBX_HOST_BASE_DIR_ENV = 'SBX_HOST_BASE_DIR';
/** The reference deployment's name for the same thing; honoured after sbx's own. */
export const REFERENCE_HOST_BASE_DIR_ENV = 'DEER_FLOW_HOST_BASE_DIR';

/** Default bound on containers one reconciliation pass looks at. */
export const DEFAULT_RECONCILE_MAX_ITEMS = 500;
/** Default wall-clock budget of one reconciliation pass. */
export const DEFAULT_RECONCILE_MAX_SECONDS = 30;

type Check = (value: unknown) => string | undefined;

const positive: Check = (v) =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? undefined : 'must be a number > 0';
const positiveInt: Check = (v) =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 ? undefined : 'must be an integer > 0';
const nonNegativeInt: Check = (v) =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 ? undefined : 'must be an integer >= 0';
const nonEmptyString: Check = (v) =>
  typeof v === 'string' && v !== '' ? undefined : 'must be a non-empty string';
const headerMap: Check = (v) =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  Object.entries(v).every(
    ([k, x]) => /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k) && typeof x === 'string',
  )
    ? undefined
    : 'must map header names to string values';
const networkMode: Check = (v) =>
  v === 'bridge' || v === 'host' ? undefined : "must be 'bridge' or 'host'";

/**
 * Keys of the `sandbox.aio` block (snake_case, as users write them). Everything the reference
 * reads from the flat `sandbox:` section (`image`, `port`, `container_prefix`, `idle_timeout`,
 * `replicas`, `mounts`, `environment`, `thread_data_mounts`, `ownership`, `provisioner_url`,
 * `provisioner_api_key`) stays there; this block holds what sbx adds:
 * - `network`: `bridge` (default) or `host` (containers share the host's network; for images
 *   that honour `SBX_AIO_PORT`, such as the test stand-in);
 * - `sandbox_host`, `bind_host`: URL host and publish address in bridge mode;
 * - `host_base_dir`: host-side base of bind-mount sources when the engine sees another
 *   filesystem (Docker-outside-of-Docker);
 * - `ready_timeout_seconds` (60), `stop_timeout_seconds` (120), `stop_grace_seconds` (10);
 * - `reconciliation_interval_seconds` (default `warm_pool.idle_check_interval_seconds`),
 *   `reconciliation_max_items` (500), `reconciliation_max_seconds` (30): the budgets of one pass
 *   (the names @sbx/e2b uses; `reconcile_*` are accepted as aliases);
 * - `api_key` (else env `SBX_AIO_API_KEY`): the image's `SANDBOX_API_KEY`, sent as
 *   `X-AIO-API-Key`; `headers`: more headers for every call to a sandbox;
 * - `limits` (`memory_mb` 4096, `cpus` 2, `pids` 1024, `disk_gb` unset) and `security`
 *   (`seccomp` default, `cap_add`, `no_new_privileges` true, `read_only_root` false, `tmpfs`,
 *   `user`): see `container-profile.ts`.
 */
const BLOCK_CHECKS: Readonly<Record<string, Check>> = {
  network: networkMode,
  sandbox_host: nonEmptyString,
  bind_host: nonEmptyString,
  host_base_dir: nonEmptyString,
  ready_timeout_seconds: positive,
  stop_timeout_seconds: positive,
  stop_grace_seconds: nonNegativeInt,
  // The names @sbx/e2b uses; the earlier `reconcile_*` spellings stay accepted (below).
  reconciliation_interval_seconds: positive,
  reconciliation_max_items: positiveInt,
  reconciliation_max_seconds: positive,
  reconcile_interval_seconds: positive,
  reconcile_max_items: positiveInt,
  reconcile_max_seconds: positive,
  api_key: nonEmptyString,
  headers: headerMap,
  // Nested blocks, read with key-path issues by `readLimits` / `readSecurity`.
  limits: () => undefined,
  security: () => undefined,
};

export const AIO_CONFIG_KEYS: readonly string[] = Object.keys(BLOCK_CHECKS);

/** Earlier names of the reconciliation keys, and the names they stand for. */
const RECONCILIATION_ALIASES: readonly (readonly [string, string])[] = [
  ['reconcile_interval_seconds', 'reconciliation_interval_seconds'],
  ['reconcile_max_items', 'reconciliation_max_items'],
  ['reconcile_max_seconds', 'reconciliation_max_seconds'],
];

interface AioBlock {
  network?: ContainerNetworkMode;
  sandbox_host?: string;
  bind_host?: string;
  host_base_dir?: string;
  ready_timeout_seconds?: number;
  stop_timeout_seconds?: number;
  stop_grace_seconds?: number;
  reconciliation_interval_seconds?: number;
  reconciliation_max_items?: number;
  reconciliation_max_seconds?: number;
  reconcile_interval_seconds?: number;
  reconcile_max_items?: number;
  reconcile_max_seconds?: number;
  api_key?: string;
  headers?: Record<string, string>;
}

export interface ReconcileSettings {
  intervalSeconds: number;
  maxItems: number;
  maxSeconds: number;
}

/** Everything the AIO provider reads from the configuration, resolved once at construction. */
export interface AioSettings {
  image: string;
  basePort: number;
  containerPrefix: string;
  /** Seconds; 0 keeps warm sandboxes until shutdown (and stops no idle active sandbox). */
  idleTimeoutSeconds: number;
  replicas: number;
  idleCheckIntervalSeconds: number;
  /** Configured mounts, given to every container before the per-sandbox mounts. */
  mounts: readonly MountSpec[];
  environment: Readonly<Record<string, string>>;
  /** `sandbox.thread_data_mounts`; undefined lets the backend decide. */
  threadDataMounts: boolean | undefined;
  provisionerUrl: string | undefined;
  provisionerApiKey: string | undefined;
  /** `skills.container_path`, canonical, snapshotted at startup. */
  skillsRoot: string;
  /** Where this process creates thread and skills-view directories. */
  baseDir: string;
  /** Where the container engine finds them (bind-mount sources); `baseDir` unless configured. */
  hostBaseDir: string;
  network: ContainerNetworkMode;
  sandboxHost: string | undefined;
  bindHost: string | undefined;
  readyTimeoutMs: number;
  /**
   * The image's API key (`sandbox.aio.api_key`, else `SBX_AIO_API_KEY`): sent on every call and
   * every readiness probe; set as `SANDBOX_API_KEY` in containers sbx starts, so the image
   * enforces it. Never logged.
   */
  apiKey: string | undefined;
  /** `sandbox.aio.limits`: memory, CPUs, processes, disk of each container (local backend). */
  resources: ContainerResources;
  /** `sandbox.aio.security`: the container hardening profile (local backend). */
  security: ContainerSecurityProfile;
  /** `sandbox.aio.headers`: sent with every call to a sandbox (and its readiness probes). */
  headers: Readonly<Record<string, string>>;
  stopTimeoutMs: number | undefined;
  stopGraceSeconds: number | undefined;
  reconcile: ReconcileSettings;
}

/** Environment fallback of `sandbox.aio.api_key`. */
export const SBX_AIO_API_KEY_ENV = 'SBX_AIO_API_KEY';

function envValue(env: Readonly<Record<string, string | undefined>>, name: string) {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/**
 * Resolves the provider settings. Unknown keys in `sandbox.aio` produce one warning naming them (a
 * typo should not silently fall back to a default); invalid values are a `ConfigError`, as is a
 * skills root that is not one canonical absolute path clear of the reserved mounts.
 */
export function resolveAioSettings(
  config: SandboxConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
  logger: Logger = silentLogger,
): AioSettings {
  const raw = config.aio ?? {};
  const issues: { path: string; message: string }[] = [];
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const check = BLOCK_CHECKS[key];
    if (check === undefined) unknown.push(key);
    // A null is "unset", as everywhere else in the configuration.
    else if (value !== null && value !== undefined) {
      const problem = check(value);
      if (problem) issues.push({ path: `sandbox.aio.${key}`, message: problem });
    }
  }
  for (const [alias, name] of RECONCILIATION_ALIASES) {
    const given = raw[alias];
    const canonical = raw[name];
    if (
      given !== undefined &&
      given !== null &&
      canonical !== undefined &&
      canonical !== null &&
      given !== canonical
    ) {
      issues.push({
        path: `sandbox.aio.${alias}`,
        message: `is another name for ${name}, which is set to a different value; keep one`,
      });
    }
  }
  const resources = readLimits(raw.limits, issues);
  const security = readSecurity(raw.security, issues);
  if (issues.length > 0) throw new ConfigError(issues, 'Invalid sandbox.aio configuration');
  if (unknown.length > 0) {
    logger.warn(`AioSandboxProvider: unknown sandbox.aio fields: ${unknown.sort().join(', ')}`, {
      unknown,
    });
  }
  const block = Object.fromEntries(
    Object.entries(raw).filter(([k, v]) => k in BLOCK_CHECKS && v !== null && v !== undefined),
  ) as AioBlock;
  let skillsRoot: string;
  try {
    skillsRoot = canonicalSkillsRoot(config.skills?.containerPath ?? DEFAULT_SKILLS_ROOT);
  } catch (err) {
    throw new ConfigError(
      [{ path: 'sandbox.skills.container_path', message: (err as Error).message }],
      'Invalid sandbox configuration',
      { cause: err },
    );
  }
  const idleCheck =
    config.warmPool?.idleCheckIntervalSeconds ?? DEFAULT_IDLE_CHECK_INTERVAL_SECONDS;
  const hostBaseDir =
    block.host_base_dir ??
    envValue(env, SBX_HOST_BASE_DIR_ENV) ??
    envValue(env, REFERENCE_HOST_BASE_DIR_ENV) ??
    config.baseDir;
  return {
    // A falsy image or port means "default", as in the reference.
    image: config.image || DEFAULT_AIO_IMAGE,
    basePort: config.port || DEFAULT_BASE_PORT,
    containerPrefix: config.containerPrefix || DEFAULT_CONTAINER_PREFIX,
    idleTimeoutSeconds: config.idleTimeout ?? DEFAULT_IDLE_TIMEOUT_SECONDS,
    replicas: config.replicas ?? DEFAULT_REPLICAS,
    idleCheckIntervalSeconds: idleCheck,
    mounts: (config.mounts ?? []).map((m) => ({
      hostPath: m.hostPath,
      containerPath: m.containerPath,
      readOnly: m.readOnly,
    })),
    environment: config.environment ?? {},
    threadDataMounts: config.threadDataMounts,
    provisionerUrl: config.provisionerUrl || undefined,
    provisionerApiKey: config.provisionerApiKey || undefined,
    skillsRoot,
    baseDir: config.baseDir,
    hostBaseDir,
    network: block.network ?? 'bridge',
    sandboxHost: block.sandbox_host,
    bindHost: block.bind_host,
    resources,
    security,
    apiKey: block.api_key ?? envValue(env, SBX_AIO_API_KEY_ENV),
    headers: block.headers ?? {},
    readyTimeoutMs:
      block.ready_timeout_seconds === undefined
        ? CREATE_READY_TIMEOUT_MS
        : Math.round(block.ready_timeout_seconds * 1000),
    stopTimeoutMs:
      block.stop_timeout_seconds === undefined
        ? undefined
        : Math.round(block.stop_timeout_seconds * 1000),
    stopGraceSeconds: block.stop_grace_seconds,
    reconcile: {
      intervalSeconds:
        block.reconciliation_interval_seconds ?? block.reconcile_interval_seconds ?? idleCheck,
      maxItems:
        block.reconciliation_max_items ?? block.reconcile_max_items ?? DEFAULT_RECONCILE_MAX_ITEMS,
      maxSeconds:
        block.reconciliation_max_seconds ??
        block.reconcile_max_seconds ??
        DEFAULT_RECONCILE_MAX_SECONDS,
    },
  };
}

/**
 * `sbx config validate` for `sandbox.aio`: unknown keys (with did-you-mean; the provider itself only
 * warns about them) and bad values.
 */
export const validateConfigBlock: ConfigBlockValidator = (config, env = process.env) => [
  ...unknownKeyIssues('sandbox.aio', config.aio, AIO_CONFIG_KEYS),
  ...collectConfigIssues(() => resolveAioSettings(config, env)),
];
