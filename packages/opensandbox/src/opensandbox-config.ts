import { type ConfigBlockValidator } from '@sbx/core';
import {
  DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_REPLICAS,
} from '@sbx/core/provider-kit';
import { collectConfigIssues } from '@sbx/core/internal';
import { isIP } from 'node:net';
import {
  ConfigError,
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  isSbxError,
  validateExtraEnv,
} from '@sbx/core';
import { unknownKeyIssues } from '@sbx/core/internal';
import type { ConfigIssue, OpenConfigBlock, SandboxSpecPolicy } from '@sbx/core';
import type { OpenSandboxProtocol } from './opensandbox-sdk.js';

export const DEFAULT_OPENSANDBOX_IMAGE = 'python:3.11';
/** Default sandbox lifetime (`sandbox_timeout`): 4 hours, renewed by every operation. */
export const DEFAULT_SANDBOX_LIFETIME_SECONDS = 14_400;
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 30;
export const DEFAULT_READY_TIMEOUT_SECONDS = 30;
/** Limit of the `true` probe that decides whether a warm sandbox may be reclaimed. */
export const HEALTH_CHECK_TIMEOUT_SECONDS = 10;
/** Limit of the directory bootstrap run right after create. */
export const BOOTSTRAP_TIMEOUT_SECONDS = 30;
/**
 * Margin added to a command's own limit when renewing for it: the sandbox must outlive the command
 * by enough to deliver its result, or a long command would be reaped mid-run.
 */
export const COMMAND_TTL_GRACE_SECONDS = 30;

/** Environment variables the SDK falls back to. */
export const OPEN_SANDBOX_API_KEY_ENV = 'OPEN_SANDBOX_API_KEY';
export const OPEN_SANDBOX_DOMAIN_ENV = 'OPEN_SANDBOX_DOMAIN';

/** Keys of the `sandbox.opensandbox` block. */
export const OPENSANDBOX_BLOCK_KEYS = [
  'api_key',
  'domain',
  'protocol',
  'request_timeout',
  'ready_timeout',
  'use_server_proxy',
  'sandbox_timeout',
  'disable_metrics',
] as const;

/**
 * The parts of a parsed `sandbox` configuration (`SandboxConfig` of @sbx/core) this provider reads.
 * Every field is optional so hand-built configurations work; the provider loader passes the whole
 * `SandboxConfig`.
 */
export interface OpenSandboxProviderConfig {
  readonly image?: string | undefined;
  readonly replicas?: number | undefined;
  readonly idleTimeout?: number | undefined;
  readonly environment?: Readonly<Record<string, string>> | undefined;
  readonly bashCommandTimeout?: number | undefined;
  readonly warmPool?: { readonly idleCheckIntervalSeconds: number } | undefined;
  /** The `sandbox.opensandbox` block (snake_case keys, see `OPENSANDBOX_BLOCK_KEYS`). */
  readonly opensandbox?: OpenConfigBlock | undefined;
  /** `sandbox.spec`: what a per-acquire spec may ask for. */
  readonly specPolicy?: SandboxSpecPolicy | undefined;
}

export interface OpenSandboxSettings {
  /** `undefined`: the SDK reads `OPEN_SANDBOX_API_KEY`. */
  readonly apiKey: string | undefined;
  /** `undefined`: the SDK reads `OPEN_SANDBOX_DOMAIN`, else `localhost:8080`. */
  readonly domain: string | undefined;
  readonly protocol: OpenSandboxProtocol;
  readonly requestTimeoutSeconds: number;
  readonly readyTimeoutSeconds: number;
  readonly useServerProxy: boolean;
  readonly disableMetrics: boolean;
  readonly image: string;
  /** Seconds a sandbox lives without activity; `null` = explicit-cleanup mode (no lifetime, no renewals). */
  readonly lifetimeSeconds: number | null;
  readonly commandTimeoutSeconds: number;
  readonly replicas: number;
  readonly idleTimeoutSeconds: number;
  readonly idleCheckIntervalSeconds: number;
  readonly environment: Readonly<Record<string, string>>;
}

const BLOCK = 'sandbox.opensandbox';

class IssueList {
  readonly issues: ConfigIssue[] = [];
  add(path: string, message: string): void {
    this.issues.push({ path, message });
  }
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function optionalString(block: OpenConfigBlock, key: string, out: IssueList): string | undefined {
  const value = block[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') {
    out.add(`${BLOCK}.${key}`, `must be a non-empty string, got ${describe(value)}`);
    return undefined;
  }
  return value;
}

function optionalBoolean(block: OpenConfigBlock, key: string, out: IssueList): boolean {
  const value = block[key];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') {
    out.add(`${BLOCK}.${key}`, `must be true or false, got ${describe(value)}`);
    return false;
  }
  return value;
}

function positive(path: string, value: unknown, fallback: number, out: IssueList): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    out.add(path, `must be positive, got ${describe(value)}`);
    return fallback;
  }
  return value;
}

function nonNegativeInteger(
  path: string,
  value: unknown,
  fallback: number,
  out: IssueList,
): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    out.add(path, `must be a non-negative integer, got ${describe(value)}`);
    return fallback;
  }
  return value;
}

/** `null`/absent → the 4 h default; `0` → explicit cleanup (`null`); negative → an issue. */
function lifetime(value: unknown, out: IssueList): number | null {
  if (value === undefined || value === null) return DEFAULT_SANDBOX_LIFETIME_SECONDS;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    out.add(
      `${BLOCK}.sandbox_timeout`,
      `must be a non-negative number of seconds (0 = explicit cleanup), got ${describe(value)}`,
    );
    return DEFAULT_SANDBOX_LIFETIME_SECONDS;
  }
  return value === 0 ? null : value;
}

/**
 * Validates the configuration once, at construction. Every problem is collected and reported in
 * one `ConfigError` (a typo never silently falls back to a default).
 */
export function resolveOpenSandboxSettings(
  config: OpenSandboxProviderConfig = {},
): OpenSandboxSettings {
  const out = new IssueList();
  const raw = config.opensandbox ?? {};
  const block: OpenConfigBlock =
    typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {};
  if (block !== raw) out.add(BLOCK, 'must be a mapping');
  for (const issue of unknownKeyIssues(BLOCK, block, OPENSANDBOX_BLOCK_KEYS)) {
    out.add(issue.path, issue.message);
  }

  let protocol: OpenSandboxProtocol = 'http';
  const rawProtocol = block.protocol;
  if (rawProtocol !== undefined && rawProtocol !== null) {
    if (rawProtocol === 'http' || rawProtocol === 'https') protocol = rawProtocol;
    else out.add(`${BLOCK}.protocol`, `must be "http" or "https", got ${describe(rawProtocol)}`);
  }

  const environment = { ...(config.environment ?? {}) };
  try {
    validateExtraEnv(environment);
  } catch (error) {
    out.add('sandbox.environment', isSbxError(error) ? error.message : String(error));
  }

  const image = config.image ?? DEFAULT_OPENSANDBOX_IMAGE;
  if (typeof image !== 'string' || image === '') {
    out.add('sandbox.image', `must be a non-empty string, got ${describe(image)}`);
  }

  const settings: OpenSandboxSettings = {
    apiKey: optionalString(block, 'api_key', out),
    domain: optionalString(block, 'domain', out),
    protocol,
    requestTimeoutSeconds: positive(
      `${BLOCK}.request_timeout`,
      block.request_timeout,
      DEFAULT_REQUEST_TIMEOUT_SECONDS,
      out,
    ),
    readyTimeoutSeconds: positive(
      `${BLOCK}.ready_timeout`,
      block.ready_timeout,
      DEFAULT_READY_TIMEOUT_SECONDS,
      out,
    ),
    useServerProxy: optionalBoolean(block, 'use_server_proxy', out),
    disableMetrics: optionalBoolean(block, 'disable_metrics', out),
    image,
    lifetimeSeconds: lifetime(block.sandbox_timeout, out),
    commandTimeoutSeconds: positive(
      'sandbox.bash_command_timeout',
      config.bashCommandTimeout,
      DEFAULT_COMMAND_TIMEOUT_SECONDS,
      out,
    ),
    replicas: nonNegativeInteger('sandbox.replicas', config.replicas, DEFAULT_REPLICAS, out),
    idleTimeoutSeconds: nonNegativeInteger(
      'sandbox.idle_timeout',
      config.idleTimeout,
      DEFAULT_IDLE_TIMEOUT_SECONDS,
      out,
    ),
    idleCheckIntervalSeconds: positive(
      'sandbox.warm_pool.idle_check_interval_seconds',
      config.warmPool?.idleCheckIntervalSeconds,
      DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
      out,
    ),
    environment,
  };
  if (out.issues.length > 0) {
    throw new ConfigError(out.issues, 'Invalid OpenSandbox provider configuration');
  }
  return settings;
}

const LOOPBACK_NAMES = new Set(['localhost', 'localhost.localdomain', 'ip6-localhost']);

function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (LOOPBACK_NAMES.has(bare) || bare.endsWith('.localhost')) return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
  return false;
}

/** Protocol and host the SDK will actually use for `domain` (a scheme in `domain` wins). */
export function effectiveEndpoint(
  domain: string,
  protocol: OpenSandboxProtocol,
): { protocol: OpenSandboxProtocol; host: string } {
  const schemed = /^(https?):\/\//i.exec(domain);
  const effective = schemed ? (schemed[1]!.toLowerCase() as OpenSandboxProtocol) : protocol;
  try {
    const url = new URL(schemed ? domain : `${effective}://${domain}`);
    return { protocol: effective, host: url.hostname };
  } catch {
    return { protocol: effective, host: domain };
  }
}

/**
 * Warnings about where the API key would travel, computed without any I/O (the key itself never
 * appears in them): no key and no domain anywhere means the SDK talks to an unauthenticated
 * `localhost:8080`; plain HTTP to anything but loopback sends the key in clear text.
 */
export function connectionWarnings(
  settings: Pick<OpenSandboxSettings, 'apiKey' | 'domain' | 'protocol'>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const envKey = env[OPEN_SANDBOX_API_KEY_ENV] || undefined;
  const envDomain = env[OPEN_SANDBOX_DOMAIN_ENV] || undefined;
  const warnings: string[] = [];
  if (
    settings.apiKey === undefined &&
    envKey === undefined &&
    settings.domain === undefined &&
    envDomain === undefined
  ) {
    warnings.push(
      `OpenSandbox has no api_key and no domain (config or ${OPEN_SANDBOX_API_KEY_ENV}/${OPEN_SANDBOX_DOMAIN_ENV}); the SDK will default to unauthenticated localhost:8080`,
    );
    return warnings;
  }
  const domain = settings.domain ?? envDomain ?? 'localhost:8080';
  const { protocol, host } = effectiveEndpoint(domain, settings.protocol);
  if (protocol === 'http' && !isLoopbackHost(host)) {
    warnings.push(
      `remote OpenSandbox domain uses HTTP (${host}): the API key and all sandbox traffic travel unencrypted; set sandbox.opensandbox.protocol to "https"`,
    );
  }
  return warnings;
}

/** `sbx config validate` for `sandbox.opensandbox`: unknown keys (with did-you-mean), bad values. */
export const validateConfigBlock: ConfigBlockValidator = (config) =>
  collectConfigIssues(() => resolveOpenSandboxSettings(config as OpenSandboxProviderConfig));
