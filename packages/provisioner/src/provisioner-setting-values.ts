// Reading one setting from its text form (an environment variable, a file value): each is
// validated as it is read, so the error names the variable or key it came from.

import { ConfigError } from '@sbx/core';
import { COMPAT_PROFILES, isCompatProfileName } from './compat-profiles.js';
import { QuantityError, isNegative, parseQuantity } from './kube-quantity.js';
import { AGENT_SANDBOX_VERSIONS, BACKENDS, SERVICE_TYPES } from './provisioner-settings-model.js';
import type {
  ProvisionerBackendName,
  ProvisionerSettings,
  ResourceQuantities,
  SandboxServiceType,
} from './provisioner-settings-model.js';

export function settingError(path: string, message: string): ConfigError {
  return new ConfigError([{ path, message }], 'Invalid provisioner settings');
}

/** Where each setting got its value (an environment variable, a file key), for error messages. */
export type SettingSources = Map<string, string>;

function integerIn(source: string, raw: string, min: number, max: number): number {
  const n = /^[0-9]+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw settingError(source, `must be an integer in ${min}..${max}, got '${raw}'`);
  }
  return n;
}

/** Sets one setting from its text form, validated; `source` names where the value came from. */
export function assign(
  target: ProvisionerSettings,
  setting: string,
  raw: string,
  source: string,
): void {
  const [group, field] = setting.split('.') as [string, string | undefined];
  if (field !== undefined) {
    let quantity;
    try {
      quantity = parseQuantity(raw);
    } catch (err) {
      if (!(err instanceof QuantityError)) throw err;
      throw settingError(
        source,
        `must be a Kubernetes quantity like 500m, 1Gi or 2e3 (${err.message}), got '${raw}'`,
      );
    }
    if (isNegative(quantity)) {
      throw settingError(source, `must be greater than or equal to 0, got '${raw}'`);
    }
    const quantities = { ...(target[group as 'requests' | 'limits'] as ResourceQuantities) };
    quantities[field as keyof ResourceQuantities] = raw;
    target[group as 'requests' | 'limits'] = quantities;
    return;
  }
  switch (setting) {
    case 'containerPort':
    case 'listenPort':
      target[setting] = integerIn(source, raw, setting === 'listenPort' ? 0 : 1, 65_535);
      return;
    case 'runAsUser':
    case 'runAsGroup':
      target[setting] = integerIn(source, raw, 0, 2_147_483_647);
      return;
    case 'activeDeadlineSeconds':
      // The server takes 1..2^31-1; 0 here means no bound (the field is left out).
      target.activeDeadlineSeconds = integerIn(source, raw, 0, 2_147_483_647);
      return;
    case 'deleteTimeoutMs':
    case 'terminatingWaitMs':
    case 'gcIntervalMs':
      target[setting] = integerIn(source, raw, 0, 86_400) * 1000;
      return;
    case 'ensureNamespace':
      if (!['true', 'false'].includes(raw))
        throw settingError(source, `must be true or false, got '${raw}'`);
      target.ensureNamespace = raw === 'true';
      return;
    case 'serviceType':
      if (!(SERVICE_TYPES as readonly string[]).includes(raw)) {
        throw settingError(source, `must be NodePort or ClusterIP, got '${raw}'`);
      }
      target.serviceType = raw as SandboxServiceType;
      return;
    case 'apiServer':
      target.apiServer = raw === '' ? undefined : raw;
      return;
    case 'backend':
      if (!(BACKENDS as readonly string[]).includes(raw)) {
        throw settingError(source, `must be one of ${BACKENDS.join(', ')}, got '${raw}'`);
      }
      target.backend = raw as ProvisionerBackendName;
      return;
    case 'agentSandboxVersion':
      if (!(AGENT_SANDBOX_VERSIONS as readonly string[]).includes(raw)) {
        throw settingError(
          source,
          `must be one of ${AGENT_SANDBOX_VERSIONS.join(', ')}, got '${raw}'`,
        );
      }
      target.agentSandboxVersion = raw as (typeof AGENT_SANDBOX_VERSIONS)[number];
      return;
    case 'shutdownAfterSeconds':
      target.shutdownAfterSeconds = integerIn(source, raw, 0, 31_536_000);
      return;
    case 'compat':
      if (!isCompatProfileName(raw)) {
        throw settingError(source, `must be one of ${COMPAT_PROFILES.join(', ')}, got '${raw}'`);
      }
      target.compat = raw;
      return;
    default:
      (target as unknown as Record<string, string>)[setting] = raw;
  }
}
