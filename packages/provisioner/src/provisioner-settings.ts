// The provisioner's settings as resolved at start-up: defaults, the compat profile's defaults, the
// config file's block, the environment, then overrides from code; every value read and checked
// here, once. What the settings are lives in `provisioner-settings-model.ts`.

import { ConfigError, errorMessage } from '@sbx/core';
import { closestKey } from '@sbx/core/internal';
import { posix } from 'node:path';
import { COMPAT } from './compat-profiles.js';
import { DEFAULT_PROVISIONER_SETTINGS } from './provisioner-settings-model.js';
import type { ProvisionerSettings } from './provisioner-settings-model.js';
import { FILE_BLOCK, FILE_KEYS, PROVISIONER_ENV } from './provisioner-settings-names.js';
import type { ProvisionerFileBlock } from './provisioner-settings-names.js';
import { assign, settingError } from './provisioner-setting-values.js';
import type { SettingSources } from './provisioner-setting-values.js';
import { checkSettings } from './provisioner-settings-checks.js';

export {
  AGENT_SANDBOX_VERSIONS,
  BACKENDS,
  DEFAULT_PROVISIONER_SETTINGS,
  SERVICE_TYPES,
} from './provisioner-settings-model.js';
export type {
  ProvisionerBackendName,
  ProvisionerSettings,
  ResourceQuantities,
  SandboxServiceType,
} from './provisioner-settings-model.js';
export { PROVISIONER_ENV } from './provisioner-settings-names.js';
export type { ProvisionerFileBlock } from './provisioner-settings-names.js';

function flatten(block: Record<string, unknown>, prefix = ''): [string, unknown][] {
  return Object.entries(block).flatMap(([k, v]) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? flatten(v as Record<string, unknown>, `${prefix}${k}.`)
      : [[`${prefix}${k}`, v] as [string, unknown]],
  );
}

export interface SettingsSources {
  /** Environment variables (win over the file). */
  env?: Readonly<Record<string, string | undefined>>;
  /** The `sandbox.provisioner` block of a config file. */
  file?: ProvisionerFileBlock;
  /** Settings set in code (win over everything). */
  overrides?: Partial<ProvisionerSettings>;
}

/**
 * The provisioner's settings: defaults, then the config file's `sandbox.provisioner` block, then the
 * environment, then `overrides`. Every value is validated here, so a bad port or service type
 * stops the start-up with a `ConfigError` naming the variable instead of failing the first create.
 */
export function resolveProvisionerSettings(sources: SettingsSources = {}): ProvisionerSettings {
  const s: ProvisionerSettings = {
    ...DEFAULT_PROVISIONER_SETTINGS,
    requests: { ...DEFAULT_PROVISIONER_SETTINGS.requests },
    limits: { ...DEFAULT_PROVISIONER_SETTINGS.limits },
  };
  // The profile first: it sets defaults that the file and the environment may then override.
  const compatRaw =
    sources.overrides?.compat ??
    sources.env?.SANDBOX_COMPAT ??
    (sources.file?.compat === undefined || sources.file.compat === null
      ? undefined
      : String(sources.file.compat));
  if (compatRaw !== undefined) {
    assign(
      s,
      'compat',
      compatRaw,
      sources.overrides?.compat !== undefined
        ? 'compat'
        : sources.env?.SANDBOX_COMPAT !== undefined
          ? 'SANDBOX_COMPAT'
          : `${FILE_BLOCK}.compat`,
    );
    Object.assign(s, COMPAT[s.compat].defaults);
  }
  const origins: SettingSources = new Map();
  for (const [key, value] of flatten(sources.file ?? {})) {
    const setting = FILE_KEYS[key];
    if (setting === undefined) {
      const close = closestKey(key, Object.keys(FILE_KEYS));
      throw settingError(
        `${FILE_BLOCK}.${key}`,
        `unknown key${close ? ` (did you mean "${close}"?)` : ''}`,
      );
    }
    if (value === null || value === undefined) continue;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw settingError(`${FILE_BLOCK}.${key}`, `must be a string, a number or a boolean`);
    }
    assign(s, setting, String(value), `${FILE_BLOCK}.${key}`);
    origins.set(setting, `${FILE_BLOCK}.${key}`);
  }
  for (const [name, setting] of Object.entries(PROVISIONER_ENV)) {
    const value = sources.env?.[name];
    if (value !== undefined) {
      assign(s, setting, value, name);
      origins.set(setting, name);
    }
  }
  Object.assign(s, sources.overrides ?? {});
  if (s.hostBaseDir === '' && posix.basename(s.threadsHostPath) === 'threads') {
    s.hostBaseDir = posix.dirname(s.threadsHostPath);
  }
  try {
    checkSettings(s, origins);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw settingError('', errorMessage(err));
  }
  return s;
}
