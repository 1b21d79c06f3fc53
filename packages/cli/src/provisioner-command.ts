import { loadOptionalDependency } from '@sbx/core';
import type { ModuleImporter } from '@sbx/core';
import type * as Provisioner from '@sbx/provisioner';
import { loadCliConfig } from './cli-config.js';
import { writeLine } from './cli-io.js';
import { stderrLogger } from './cli-logger.js';
import { exitCodeFor, reportFailure } from './command-result.js';
import type { CommandRuntime, ProviderCommandOptions } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';

export interface ProvisionerOptions extends ProviderCommandOptions {
  host?: string;
  port?: number;
}

type ProvisionerModule = typeof Provisioner;

/**
 * `sbx provisioner`: serves the Kubernetes provisioner (@sbx/provisioner, an optional peer) until
 * interrupted. Settings come from the config file's `sandbox.provisioner` block and the
 * environment (which wins); `--host` / `--port` win over both. Everything goes to stderr.
 */
export async function provisionerCommand(
  options: ProvisionerOptions,
  runtime: CommandRuntime,
): Promise<number> {
  const { io, signal } = runtime;
  const logger = stderrLogger(io.stderr, options.verbose);
  try {
    const { config } = await loadCliConfig(options, io);
    const mod = await loadOptionalDependency<ProvisionerModule>(
      '@sbx/provisioner',
      '`sbx provisioner`',
      ...(runtime.importer ? [runtime.importer as ModuleImporter] : []),
    );
    const settings = mod.resolveProvisionerSettings({
      file: config.provisioner ?? {},
      env: io.env,
      overrides: {
        ...(options.host !== undefined ? { listenHost: options.host } : {}),
        ...(options.port !== undefined ? { listenPort: options.port } : {}),
      },
    });
    const running = await mod.startProvisioner({ settings, logger });
    const banner = {
      url: running.url,
      namespace: settings.namespace,
      serviceType: settings.serviceType,
    };
    writeLine(
      io.stderr,
      options.json
        ? JSON.stringify({ event: 'listening', ...banner })
        : `sbx provisioner: listening on ${running.url} (namespace ${settings.namespace}, ${settings.serviceType} services)`,
    );
    if (!signal?.aborted) {
      await new Promise<void>((resolve) =>
        signal?.addEventListener('abort', () => resolve(), { once: true }),
      );
    }
    await running.close();
    return ExitCode.OK;
  } catch (err) {
    reportFailure(io, options, err);
    return exitCodeFor(err);
  }
}
