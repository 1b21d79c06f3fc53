import { errorMessage, loadSandboxConfig } from '@sbx/core';
import type { Logger } from '@sbx/core';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import { startProvisioner } from './provisioner-server.js';
import type { RunningProvisioner } from './provisioner-server.js';

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/**
 * One JSON object per line (what log collectors in a cluster read), from `level` up; default
 * `info`. The executable takes the level from `SBX_LOG_LEVEL`.
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
  /** How `@kubernetes/client-node` is imported (a bundle passes the module it carries). */
  importer?: (specifier: string) => Promise<unknown>;
}

/** The provisioner from a config file and the environment. */
export async function serveProvisioner(
  options: ServeProvisionerOptions = {},
): Promise<RunningProvisioner> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? jsonLineLogger(env.SBX_LOG_LEVEL);
  const config = options.configFile
    ? await loadSandboxConfig({ path: options.configFile }, { env })
    : undefined;
  const settings = resolveProvisionerSettings({ file: config?.provisioner ?? {}, env });
  return startProvisioner({
    settings,
    logger,
    ...(options.importer ? { importer: options.importer } : {}),
  });
}

/**
 * The provisioner as a process runs it (the `sbx-provisioner` executable, the container image):
 * settings from `SBX_CONFIG` and the environment, serving until SIGTERM or SIGINT, on which it
 * stops accepting requests, closes and exits 0 (Kubernetes sends SIGTERM to a Pod it deletes). A
 * start-up failure is logged and exits 1.
 */
export async function runProvisionerProcess(
  options: Pick<ServeProvisionerOptions, 'importer'> = {},
): Promise<void> {
  const logger = jsonLineLogger(process.env.SBX_LOG_LEVEL);
  let running: RunningProvisioner;
  try {
    running = await serveProvisioner({
      env: process.env,
      configFile: process.env.SBX_CONFIG,
      logger,
      ...options,
    });
  } catch (err) {
    logger.error('provisioner failed to start', { error: errorMessage(err) });
    process.exit(1);
  }
  const stop = (signal: string) => {
    logger.info('stopping', { signal });
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('close failed', { error: errorMessage(err) });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
