import type { Logger } from '@sbx/core';
import { silentLogger } from '@sbx/core';

/** Host name in sandbox URLs, and (reference name) its fallback. */
export const SANDBOX_HOST_ENV = ['SBX_SANDBOX_HOST', 'DEER_FLOW_SANDBOX_HOST'] as const;
/** Explicit address for published ports, and (reference name) its fallback. */
export const SANDBOX_BIND_HOST_ENV = [
  'SBX_SANDBOX_BIND_HOST',
  'DEER_FLOW_SANDBOX_BIND_HOST',
] as const;

export type HostEnvironment = Readonly<Record<string, string | undefined>>;

function firstSet(env: HostEnvironment, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = env[name]?.trim();
    if (value) return value;
  }
  return undefined;
}

/** The host of sandbox URLs: explicit, else the environment, else `localhost`. */
export function resolveSandboxHost(explicit?: string, env: HostEnvironment = process.env): string {
  return explicit?.trim() || firstSet(env, SANDBOX_HOST_ENV) || 'localhost';
}

/**
 * The host address a sandbox's port is published on (`-p <bind>:<port>:8080`). An explicit bind
 * address wins. Otherwise it follows the sandbox host: a loopback host publishes on loopback only
 * (`127.0.0.1`, or `[::1]` for IPv6), so a sandbox is not reachable from the network by default;
 * any other host (e.g. `host.docker.internal`, when the gateway itself runs in a container and
 * reaches sandboxes through the host) needs `0.0.0.0`.
 */
export function resolveDockerBindHost(
  options: { sandboxHost?: string; bindHost?: string; env?: HostEnvironment; logger?: Logger } = {},
): string {
  const env = options.env ?? process.env;
  const logger = options.logger ?? silentLogger;
  const explicit = options.bindHost?.trim() || firstSet(env, SANDBOX_BIND_HOST_ENV);
  if (explicit) return explicit;
  const host = (options.sandboxHost ?? firstSet(env, SANDBOX_HOST_ENV) ?? 'localhost')
    .trim()
    .toLowerCase();
  if (host === '::1' || host === '[::1]') return '[::1]';
  if (host === '' || host === 'localhost' || host === '127.0.0.1') {
    logger.debug('Docker sandbox bind: 127.0.0.1 (loopback default)');
    return '127.0.0.1';
  }
  return '0.0.0.0';
}
