import path from 'node:path';
import {
  InvalidArgumentError,
  loadSandboxConfig,
  parseSandboxConfig,
  type SandboxConfig,
} from '@sbx/core';
import { SBX_CONFIG_PATH_ENV, providerSpecifierProblem } from '@sbx/core/internal';
import type { CliIo } from './cli-io.js';

/** Environment variable naming the config file when `--config` is not given. */
export const SBX_CONFIG_ENV = 'SBX_CONFIG';

export interface CliConfigOptions {
  /** `--config <file>`. */
  config?: string | undefined;
  /** `--provider <specifier>`: replaces `sandbox.use`. */
  provider?: string | undefined;
}

export interface LoadedCliConfig {
  readonly config: SandboxConfig;
  /** Absolute path of the file read, or `undefined` for built-in defaults. */
  readonly file: string | undefined;
}

/**
 * Where the configuration comes from: `--config`, else `SBX_CONFIG`, else core's
 * `SBX_CONFIG_PATH` (so a host's setting applies to the CLI as well), else built-in defaults (the
 * `@sbx/local` provider with `SBX_HOME` or `./.sbx` as data directory).
 */
export function configFileOf(options: CliConfigOptions, io: CliIo): string | undefined {
  const named = options.config ?? (io.env[SBX_CONFIG_ENV] || io.env[SBX_CONFIG_PATH_ENV]);
  return named ? path.resolve(io.cwd, named) : undefined;
}

/**
 * Loads and validates the configuration.
 *
 * @throws ConfigError with every offending key path when the file is invalid or unreadable
 * @throws InvalidArgumentError when `--provider` is not a provider specifier (a usage error)
 */
export async function loadCliConfig(
  options: CliConfigOptions,
  io: CliIo,
): Promise<LoadedCliConfig> {
  const file = configFileOf(options, io);
  const parseOptions = { env: io.env, cwd: file ? path.dirname(file) : io.cwd };
  const loaded = file
    ? await loadSandboxConfig({ path: file }, parseOptions)
    : parseSandboxConfig({}, parseOptions);
  if (options.provider === undefined) return { config: loaded, file };
  const problem = providerSpecifierProblem(options.provider);
  if (problem) throw new InvalidArgumentError(`--provider ${options.provider}: ${problem}`);
  return { config: Object.freeze({ ...loaded, use: options.provider }), file };
}
