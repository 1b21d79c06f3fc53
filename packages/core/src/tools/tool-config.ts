import type { SandboxConfig } from '../config/config.js';

/**
 * The slice of sandbox configuration the agent tools read. Hosts usually derive it from their loaded
 * sbx configuration; every field has the documented default, so `{}` is a valid configuration.
 */
export interface ToolConfig {
  /** Middle-truncation cap of `bash` results; `0` disables. Default 20000. */
  bashOutputMaxChars: number;
  /** Head-truncation cap of `read_file` results; `0` disables. Default 50000. */
  readFileOutputMaxChars: number;
  /** Head-truncation cap of `ls` results; `0` disables. Default 20000. */
  lsOutputMaxChars: number;
  /** Wall-clock limit of a host `bash` command on a local sandbox, in seconds. Default 600. */
  bashCommandTimeoutSeconds: number;
  /**
   * Host bash on the local provider is not a security boundary, so it is off unless enabled. Remote
   * sandboxes ignore this flag. Default false.
   */
  allowHostBash: boolean;
  readBeforeWrite: { enabled: boolean };
  /** Configured `glob` result limit (the tool clamps it to 1..1000). Default 200. */
  globMaxResults: number | undefined;
  /** Configured `grep` result limit (the tool clamps it to 1..500). Default 100. */
  grepMaxResults: number | undefined;
  /**
   * Byte limit of one `write_file` call (append included), and of `str_replace`'s `old_str`,
   * `new_str` and growth. At most 16 MiB (`MAX_TOOL_WRITE_BYTES`): `<= 0` or a larger value means
   * 16 MiB. When unset, the environment variable `SBX_WRITE_FILE_MAX_BYTES` is read on every call
   * (missing or malformed: 81920).
   */
  writeFileMaxBytes: number | undefined;
  /**
   * bash's yield mode and the process tools (`process_output`, `process_write`, `process_kill`,
   * `process_list`). Default false: bash runs every command to completion, as the reference does,
   * and the process tools refuse.
   */
  processTools: boolean;
}

export type ToolConfigInput = Partial<Omit<ToolConfig, 'readBeforeWrite'>> & {
  readBeforeWrite?: Partial<ToolConfig['readBeforeWrite']>;
};

export const DEFAULT_BASH_OUTPUT_MAX_CHARS = 20_000;
export const DEFAULT_READ_FILE_OUTPUT_MAX_CHARS = 50_000;
export const DEFAULT_LS_OUTPUT_MAX_CHARS = 20_000;
export const DEFAULT_BASH_COMMAND_TIMEOUT_SECONDS = 600;
export const DEFAULT_WRITE_FILE_MAX_BYTES = 81_920;
export const WRITE_FILE_MAX_BYTES_ENV = 'SBX_WRITE_FILE_MAX_BYTES';

export function resolveToolConfig(input: ToolConfigInput = {}): ToolConfig {
  return {
    bashOutputMaxChars: input.bashOutputMaxChars ?? DEFAULT_BASH_OUTPUT_MAX_CHARS,
    readFileOutputMaxChars: input.readFileOutputMaxChars ?? DEFAULT_READ_FILE_OUTPUT_MAX_CHARS,
    lsOutputMaxChars: input.lsOutputMaxChars ?? DEFAULT_LS_OUTPUT_MAX_CHARS,
    bashCommandTimeoutSeconds:
      input.bashCommandTimeoutSeconds ?? DEFAULT_BASH_COMMAND_TIMEOUT_SECONDS,
    allowHostBash: input.allowHostBash ?? false,
    readBeforeWrite: { enabled: input.readBeforeWrite?.enabled ?? true },
    globMaxResults: input.globMaxResults,
    grepMaxResults: input.grepMaxResults,
    writeFileMaxBytes: input.writeFileMaxBytes,
    processTools: input.processTools ?? false,
  };
}

/**
 * The effective single-call `write_file` limit. The environment is read per call (not cached) so an
 * operator can change it without restarting; a malformed value falls back to the default instead of
 * silently disabling the guard.
 */
export function effectiveWriteFileMaxBytes(
  config: Pick<ToolConfig, 'writeFileMaxBytes'>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): number {
  if (config.writeFileMaxBytes !== undefined) return config.writeFileMaxBytes;
  const raw = env[WRITE_FILE_MAX_BYTES_ENV]?.trim();
  if (raw === undefined || !/^[+-]?\d+$/.test(raw)) return DEFAULT_WRITE_FILE_MAX_BYTES;
  return Number.parseInt(raw, 10);
}

interface ResultLimit {
  readonly fallback: number;
  readonly upper: number;
}

export const GLOB_RESULT_LIMIT: ResultLimit = { fallback: 200, upper: 1000 };
export const GREP_RESULT_LIMIT: ResultLimit = { fallback: 100, upper: 500 };

function clampLimit(value: number, limit: ResultLimit): number {
  return value <= 0 ? limit.fallback : Math.min(value, limit.upper);
}

/**
 * The number of results a search returns: the smaller of what the model asked for and what the
 * operator configured, each clamped to `1..upper` (non-positive values mean "default").
 */
export function effectiveResultLimit(
  requested: number | undefined,
  configured: number | undefined,
  limit: ResultLimit,
): number {
  const req = clampLimit(requested ?? limit.fallback, limit);
  const conf = clampLimit(
    configured !== undefined && Number.isInteger(configured) ? configured : limit.fallback,
    limit,
  );
  return Math.min(req, conf);
}

/**
 * The tool configuration carried by a loaded `sandbox:` section. Hosts that load sbx configuration
 * pass `toolConfigFromSandboxConfig(config)` as `ToolContext.config`.
 */
export function toolConfigFromSandboxConfig(
  config: Pick<
    SandboxConfig,
    | 'bashOutputMaxChars'
    | 'readFileOutputMaxChars'
    | 'lsOutputMaxChars'
    | 'bashCommandTimeout'
    | 'allowHostBash'
    | 'readBeforeWrite'
    | 'tools'
  >,
): ToolConfigInput {
  return {
    bashOutputMaxChars: config.bashOutputMaxChars,
    readFileOutputMaxChars: config.readFileOutputMaxChars,
    lsOutputMaxChars: config.lsOutputMaxChars,
    bashCommandTimeoutSeconds: config.bashCommandTimeout,
    allowHostBash: config.allowHostBash,
    readBeforeWrite: { enabled: config.readBeforeWrite.enabled },
    globMaxResults: config.tools.glob.maxResults,
    grepMaxResults: config.tools.grep.maxResults,
    processTools: config.tools.processTools,
  };
}
