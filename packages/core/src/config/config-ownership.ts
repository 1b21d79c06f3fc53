import type { OwnershipConfig, OwnershipType } from './config.js';
import { DEFAULT_OWNERSHIP_KEY_PREFIX } from './config-schema.js';
import type { Env } from './config-input.js';
import { ConfigError } from '../errors/errors.js';

/** sbx's own variable: a Redis URL for ownership leases; being set implies `redis`. */
export const SBX_OWNERSHIP_REDIS_URL_ENV = 'SBX_OWNERSHIP_REDIS_URL';
/** Reference deployments set these; honoured so an existing deployment keeps its store. */
export const REFERENCE_OWNERSHIP_REDIS_URL_ENV = 'DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL';
export const REFERENCE_STREAM_BRIDGE_REDIS_URL_ENV = 'DEER_FLOW_STREAM_BRIDGE_REDIS_URL';
export const DEFAULT_OWNERSHIP_REDIS_URL = 'redis://localhost:6379/0';

/** Where the resolved store type (or URL) came from; worth logging at startup. */
export type OwnershipSource = 'config' | 'stream-bridge' | `env:${string}` | 'default';

export interface ResolvedOwnershipConfig {
  readonly type: OwnershipType;
  /** Set exactly when `type` is `redis`. */
  readonly redisUrl: string | undefined;
  readonly renewalIntervalSeconds: number;
  readonly ttlMultiplier: number;
  readonly keyPrefix: string;
  /** `renewalIntervalSeconds × ttlMultiplier`. */
  readonly leaseTtlSeconds: number;
  /** Why this type was chosen. */
  readonly source: OwnershipSource;
  /** Where `redisUrl` came from (redis only). */
  readonly redisUrlSource: OwnershipSource | undefined;
}

export interface ResolveOwnershipOptions {
  /**
   * A host application's stream bridge, when it has one. A redis bridge means the deployment is
   * multi-instance, so ownership follows it to redis (reference behaviour); a memory bridge
   * implies nothing.
   */
  streamBridge?: { readonly type?: string; readonly redisUrl?: string | undefined };
}

const DEFAULTS = {
  renewalIntervalSeconds: 30,
  ttlMultiplier: 4,
  keyPrefix: DEFAULT_OWNERSHIP_KEY_PREFIX,
};

// Every variable that can name the URL, in precedence order; REDIS_URL only supplies a URL and
// never implies redis on its own (it is too generic to prove a multi-instance deployment).
const URL_CHAIN = [
  SBX_OWNERSHIP_REDIS_URL_ENV,
  REFERENCE_OWNERSHIP_REDIS_URL_ENV,
  REFERENCE_STREAM_BRIDGE_REDIS_URL_ENV,
  'REDIS_URL',
] as const;
const INFERRING = URL_CHAIN.slice(0, 3);

function envValue(env: Env, name: string): string | undefined {
  const v = env[name];
  // An empty variable is how shells and compose files say "unset".
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function checkUrl(url: string, where: string): string {
  let ok = false;
  try {
    const proto = new URL(url).protocol;
    ok = proto === 'redis:' || proto === 'rediss:';
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new ConfigError(
      [{ path: where, message: 'must be a redis:// or rediss:// URL' }],
      'Invalid sandbox ownership configuration',
    );
  }
  return url;
}

function urlFromChain(env: Env, first?: { url: string | undefined; source: OwnershipSource }) {
  if (first?.url) return { url: first.url, source: first.source };
  for (const name of URL_CHAIN) {
    const v = envValue(env, name);
    if (v) return { url: checkUrl(v, `$${name}`), source: `env:${name}` as const };
  }
  return { url: DEFAULT_OWNERSHIP_REDIS_URL, source: 'default' as const };
}

/**
 * Decides the ownership store, in this order:
 * 1. an explicit `sandbox.ownership` section (an explicit `memory` beats every variable);
 * 2. a redis stream bridge of the host application (`options.streamBridge`);
 * 3. `SBX_OWNERSHIP_REDIS_URL` set → redis;
 * 4. `DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL` or `DEER_FLOW_STREAM_BRIDGE_REDIS_URL` set → redis;
 * 5. memory.
 * A redis store without a configured URL takes the first of `SBX_OWNERSHIP_REDIS_URL`,
 * `DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL`, `DEER_FLOW_STREAM_BRIDGE_REDIS_URL`, `REDIS_URL`,
 * else `redis://localhost:6379/0`.
 *
 * @throws ConfigError when a variable it uses holds something that is not a Redis URL
 */
export function resolveOwnershipConfig(
  config: { readonly ownership?: OwnershipConfig | undefined } | undefined | null,
  env: Env = process.env,
  options: ResolveOwnershipOptions = {},
): ResolvedOwnershipConfig {
  const explicit = config?.ownership;
  const timing = explicit ?? DEFAULTS;
  const build = (
    type: OwnershipType,
    source: OwnershipSource,
    url?: { url: string; source: OwnershipSource },
  ): ResolvedOwnershipConfig =>
    Object.freeze({
      type,
      redisUrl: type === 'redis' ? url?.url : undefined,
      renewalIntervalSeconds: timing.renewalIntervalSeconds,
      ttlMultiplier: timing.ttlMultiplier,
      keyPrefix: timing.keyPrefix,
      leaseTtlSeconds: timing.renewalIntervalSeconds * timing.ttlMultiplier,
      source,
      redisUrlSource: type === 'redis' ? url?.source : undefined,
    });

  if (explicit) {
    if (explicit.type === 'memory') return build('memory', 'config');
    return build(
      'redis',
      'config',
      urlFromChain(env, { url: explicit.redisUrl, source: 'config' }),
    );
  }
  const bridge = options.streamBridge;
  if (bridge?.type === 'redis') {
    const bridgeUrl = bridge.redisUrl
      ? checkUrl(bridge.redisUrl, 'stream_bridge.redis_url')
      : undefined;
    return build(
      'redis',
      'stream-bridge',
      urlFromChain(env, { url: bridgeUrl, source: 'stream-bridge' }),
    );
  }
  for (const name of INFERRING) {
    if (envValue(env, name)) return build('redis', `env:${name}`, urlFromChain(env));
  }
  return build('memory', 'default');
}
