import { loadSandboxConfig } from '@sbx/core';
import type { Logger } from '@sbx/core';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import { startProvisioner } from './provisioner-server.js';
import type { RunningProvisioner } from './provisioner-server.js';

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/**
 * One JSON object per line on stderr (what log collectors in a cluster read), from `level` up.
 * `SBX_LOG_LEVEL` sets the level of the executable; default `info`.
 */
export function jsonLineLogger(
  level: string = 'info',
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  const from = Math.max(0, LEVELS.indexOf(level as (typeof LEVELS)[number]));
  const emit = (at: (typeof LEVELS)[number]) => (msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS.indexOf(at) < from) return;
    write(`${JSON.stringify({ time: new Date().toISOString(), level: at, msg, ...fields })}\n`);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

export interface ServeProvisionerOptions {
  env?: Readonly<Record<string, string | undefined>>;
  /** An sbx config file whose `sandbox.provisioner` block holds settings (the environment wins). */
  configFile?: string | undefined;
  logger?: Logger;
}

/**
 * The provisioner as a process runs it: settings from the config file and the environment, then
 * serving until SIGTERM or SIGINT, on which it stops accepting requests and closes (a Pod being
 * deleted by Kubernetes gets SIGTERM). Used by the `sbx-provisioner` executable and `sbx provisioner`.
 */
export async function serveProvisioner(
  options: ServeProvisionerOptions = {},
): Promise<RunningProvisioner> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? jsonLineLogger(env.SBX_LOG_LEVEL);
  const config = options.configFile
    ? await loadSandboxConfig({ path: options.configFile }, { env })
    : undefined;
  const settings = resolveProvisionerSettings({ file: config?.provisioner ?? {}, env });
  return startProvisioner({ settings, logger });
}
