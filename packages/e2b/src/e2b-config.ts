import { type ConfigBlockValidator } from '@sbx/core';
import { leaseTtlSeconds } from '@sbx/core/provider-kit';
import { collectConfigIssues, unknownKeyIssues } from '@sbx/core/internal';
import { ConfigError, silentLogger } from '@sbx/core';
import { DEFAULT_SKILLS_ROOT } from '@sbx/core/internal';
import type {
  Logger,
  OverflowPolicy,
  ResolvedOwnershipConfig,
  SandboxConfig,
  VolumeMountConfig,
} from '@sbx/core';
import { z } from 'zod';
import { DEFAULT_E2B_HOME_DIR } from './e2b-sandbox.js';

export const DEFAULT_E2B_TEMPLATE = 'code-interpreter-v1';
export const DEFAULT_E2B_IDLE_TIMEOUT_SECONDS = 1800;
/** The longest remote lifetime E2B allows (24 h). */
export const MAX_E2B_TIMEOUT_SECONDS = 86_400;
export const DEFAULT_E2B_REPLICAS = 3;
/** Reservations younger than this are never reaped: twice the SDK's 60 s create timeout. */
export const MIN_CAPACITY_RESERVATION_SECONDS = 120;

/**
 * Options of the `sandbox.e2b` block (snake_case, as users write them). The capacity and lifecycle
 * knobs (`replicas`, `overflow_policy`, `acquire_timeout`, `burst_limit`, `idle_timeout`, `mounts`,
 * `environment`, `ownership`, `image`) stay in the shared `sandbox:` section.
 */
const blockSchema = z.looseObject({
  api_key: z.string().min(1).optional(),
  template: z.string().min(1).optional(),
  domain: z.string().min(1).optional(),
  /** Control-plane base URL (self-hosted E2B, or a local stand-in). */
  api_url: z.url().optional(),
  /** envd base URL for every VM (self-hosted E2B, or a local stand-in). */
  sandbox_url: z.url().optional(),
  home_dir: z.string().startsWith('/').optional(),
  request_timeout_ms: z.number().int().gt(0).optional(),
  command_timeout_ms: z.number().int().gte(0).optional(),
  reconciliation_interval_seconds: z.number().optional(),
  reconciliation_grace_seconds: z.number().optional(),
  reconciliation_orphan_ttl_seconds: z.number().optional(),
  reconciliation_max_pages: z.number().optional(),
  reconciliation_max_items: z.number().optional(),
  reconciliation_max_seconds: z.number().optional(),
  list_states: z
    .array(z.enum(['running', 'paused']))
    .nonempty()
    .optional(),
});

export const E2B_CONFIG_KEYS: readonly string[] = Object.keys(blockSchema.shape);

export interface ReconciliationSettings {
  intervalSeconds: number;
  graceSeconds: number;
  orphanTtlSeconds: number;
  maxPages: number;
  maxItems: number;
  maxSeconds: number;
}

/** Everything the provider reads from the configuration, resolved once at construction. */
export interface E2BSettings {
  apiKey: string | undefined;
  template: string;
  domain: string | undefined;
  apiUrl: string | undefined;
  sandboxUrl: string | undefined;
  requestTimeoutMs: number | undefined;
  commandTimeoutMs: number | undefined;
  homeDir: string;
  /** Remote idle lifetime in seconds; 0 = pass no timeout (the SDK default applies). */
  idleTimeoutSeconds: number;
  replicas: number;
  /** The effective policy (`burst` with no burst limit becomes `reject`). */
  overflowPolicy: OverflowPolicy;
  acquireTimeoutSeconds: number;
  burstLimit: number;
  /** `replicas + burstLimit` under `burst`, else `replicas`. */
  capacityLimit: number;
  /** Bound on concurrent SDK lifecycle calls: `max(4, min(32, capacityLimit + 1))`. */
  sdkConcurrency: number;
  reconciliation: ReconciliationSettings;
  /** `skills.container_path`, snapshotted at startup. */
  skillsRoot: string;
  mounts: readonly VolumeMountConfig[];
  environment: Readonly<Record<string, string>>;
  /** States the reconciliation listing asks for. Default both: `connect` resumes a paused VM. */
  listStates: ('running' | 'paused')[] | undefined;
  baseDir: string;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/**
 * Resolves the provider settings. Unknown keys in `sandbox.e2b` produce one warning naming them (a
 * typo such as `overflo_policy` should not silently fall back to a default); invalid values are a
 * `ConfigError`.
 */
export function resolveE2BSettings(
  config: SandboxConfig,
  logger: Logger = silentLogger,
): E2BSettings {
  const parsed = blockSchema.safeParse(config.e2b ?? {});
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => ({
        path: ['sandbox', 'e2b', ...i.path.map(String)].join('.'),
        message: i.message,
      })),
      'Invalid sandbox.e2b configuration',
    );
  }
  const block = parsed.data;
  const unknown = Object.keys(config.e2b ?? {}).filter((k) => !E2B_CONFIG_KEYS.includes(k));
  if (unknown.length > 0) {
    logger.warn(`E2BSandboxProvider: unknown sandbox config fields: ${unknown.sort().join(', ')}`, {
      unknown,
    });
  }

  let policy: OverflowPolicy = config.overflowPolicy;
  const burstLimit = Math.max(0, Math.trunc(config.burstLimit));
  if (policy === 'burst' && burstLimit === 0) {
    logger.warn("E2BSandboxProvider: overflow_policy 'burst' with burst_limit 0; using 'reject'");
    policy = 'reject';
  }
  const replicas = config.replicas ?? DEFAULT_E2B_REPLICAS;
  const capacityLimit = policy === 'burst' ? replicas + burstLimit : replicas;
  const num = (v: number | undefined, dflt: number) =>
    v === undefined || !Number.isFinite(v) ? dflt : v;

  return {
    apiKey: block.api_key ?? process.env.E2B_API_KEY,
    template: block.template ?? config.image ?? DEFAULT_E2B_TEMPLATE,
    domain: block.domain,
    apiUrl: block.api_url,
    sandboxUrl: block.sandbox_url,
    requestTimeoutMs: block.request_timeout_ms,
    commandTimeoutMs: block.command_timeout_ms,
    homeDir: (block.home_dir ?? DEFAULT_E2B_HOME_DIR).replace(/\/+$/, '') || '/',
    idleTimeoutSeconds: clamp(
      Math.trunc(config.idleTimeout ?? DEFAULT_E2B_IDLE_TIMEOUT_SECONDS),
      0,
      MAX_E2B_TIMEOUT_SECONDS,
    ),
    replicas,
    overflowPolicy: policy,
    acquireTimeoutSeconds: Math.max(1, Math.trunc(config.acquireTimeout)),
    burstLimit,
    capacityLimit,
    sdkConcurrency: Math.max(4, Math.min(32, capacityLimit + 1)),
    reconciliation: {
      intervalSeconds: Math.max(1, num(block.reconciliation_interval_seconds, 60)),
      graceSeconds: Math.max(0, num(block.reconciliation_grace_seconds, 120)),
      orphanTtlSeconds: Math.max(0, num(block.reconciliation_orphan_ttl_seconds, 3600)),
      maxPages: Math.max(1, Math.trunc(num(block.reconciliation_max_pages, 10))),
      maxItems: Math.max(1, Math.trunc(num(block.reconciliation_max_items, 200))),
      maxSeconds: Math.max(0.1, num(block.reconciliation_max_seconds, 15)),
    },
    skillsRoot: (config.skills?.containerPath ?? DEFAULT_SKILLS_ROOT).replace(/\/+$/, ''),
    mounts: config.mounts,
    environment: config.environment,
    listStates: block.list_states,
    baseDir: config.baseDir,
  };
}

/**
 * How long a reservation or a missing-marked VM keeps its ledger slot:
 * `max(lease TTL + grace, 120 s)` in ms.
 */
export function reservationMaxAgeMs(
  ownership: ResolvedOwnershipConfig,
  settings: Pick<E2BSettings, 'reconciliation'>,
): number {
  const seconds = Math.max(
    leaseTtlSeconds(ownership) + settings.reconciliation.graceSeconds,
    MIN_CAPACITY_RESERVATION_SECONDS,
  );
  return Math.round(seconds * 1000);
}

/**
 * `sbx config validate` for `sandbox.e2b`: unknown keys (with did-you-mean; the provider itself only
 * warns about them) and bad values.
 */
export const validateConfigBlock: ConfigBlockValidator = (config) => [
  ...unknownKeyIssues('sandbox.e2b', config.e2b, E2B_CONFIG_KEYS),
  ...collectConfigIssues(() => resolveE2BSettings(config)),
];
