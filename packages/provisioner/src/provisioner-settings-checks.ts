// The checks no single value shows, run on the resolved settings (overrides from code included,
// which bypass the reading of values): names the API server would refuse, requests above their
// limits, paths that overlap, a sub-path template with unknown placeholders.

import { posix } from 'node:path';
import { QuantityError, compareQuantities, isNegative, parseQuantity } from './kube-quantity.js';
import { dns1123LabelProblem, dns1123SubdomainProblem } from './kube-rules.js';
import { egressProxyProblem } from './egress-proxy-setting.js';
import type { ProvisionerSettings, ResourceQuantities } from './provisioner-settings-model.js';
import { settingError } from './provisioner-setting-values.js';
import type { SettingSources } from './provisioner-setting-values.js';

/** Checks what no single value shows: the namespace, the paths, the sub-path template. */
export function checkSettings(s: ProvisionerSettings, sources: SettingSources): void {
  const namespaceProblem = dns1123LabelProblem(s.namespace);
  if (namespaceProblem) {
    throw settingError(
      sources.get('namespace') ?? 'K8S_NAMESPACE',
      `must be a DNS-1123 label (${namespaceProblem}), got '${s.namespace}'`,
    );
  }
  checkRequestsWithinLimits(s, sources);
  for (const [setting, name, value] of [
    ['skillsPvcName', 'SKILLS_PVC_NAME', s.skillsPvcName],
    ['userDataPvcName', 'USERDATA_PVC_NAME', s.userDataPvcName],
  ] as const) {
    const problem = value === '' ? undefined : dns1123SubdomainProblem(value);
    if (problem) {
      throw settingError(
        sources.get(setting) ?? name,
        `must be a PersistentVolumeClaim name, a DNS-1123 subdomain (${problem}), got '${value}'`,
      );
    }
  }
  if (s.runtimeClassName !== '') {
    const problem = dns1123SubdomainProblem(s.runtimeClassName);
    if (problem) {
      throw settingError(
        sources.get('runtimeClassName') ?? 'SANDBOX_RUNTIME_CLASS_NAME',
        `must be a RuntimeClass name, a DNS-1123 subdomain (${problem}), got '${s.runtimeClassName}'`,
      );
    }
  }
  if (
    !Number.isSafeInteger(s.activeDeadlineSeconds) ||
    s.activeDeadlineSeconds < 0 ||
    s.activeDeadlineSeconds > 2_147_483_647
  ) {
    throw settingError(
      sources.get('activeDeadlineSeconds') ?? 'SANDBOX_ACTIVE_DEADLINE_SECONDS',
      `must be an integer in 0..2147483647 (0: no bound), got ${s.activeDeadlineSeconds}`,
    );
  }
  for (const [name, value] of [
    ['THREADS_HOST_PATH', s.threadsHostPath],
    ['the host base dir', s.hostBaseDir],
  ] as const) {
    if (
      value !== '' &&
      (!value.startsWith('/') || posix.normalize(value) !== value.replace(/\/+$/, ''))
    ) {
      throw settingError(name, `must be an absolute, normalised path, got '${value}'`);
    }
  }
  if (
    !/^[A-Za-z0-9_.-]+$/.test(s.userDataPvcSubpathPrefix) ||
    s.userDataPvcSubpathPrefix.startsWith('.')
  ) {
    throw settingError(
      'USERDATA_PVC_SUBPATH_PREFIX',
      `must be one path segment, got '${s.userDataPvcSubpathPrefix}'`,
    );
  }
  const unknownPlaceholder = /\{(?!user_id\}|thread_id\})[^}]*\}/.exec(s.skillsPvcSubpathTemplate);
  if (unknownPlaceholder) {
    throw settingError(
      'SKILLS_PVC_SUBPATH_TEMPLATE',
      `may use only {user_id} and {thread_id}, found ${unknownPlaceholder[0]}`,
    );
  }
  if (s.egressProxy !== '') {
    const problem = egressProxyProblem(s.egressProxy);
    if (problem) {
      throw settingError(
        sources.get('egressProxy') ?? 'SANDBOX_EGRESS_PROXY',
        `must be <service>:<port>, a Service in the sandbox namespace (${problem}), got '${s.egressProxy}'`,
      );
    }
    if (s.backend !== 'pods') {
      throw settingError(
        sources.get('egressProxy') ?? 'SANDBOX_EGRESS_PROXY',
        'is supported by the pods backend only: the agent-sandbox backend makes no per-sandbox NetworkPolicy',
      );
    }
  }
  if (s.sandboxImage === '') throw settingError('SANDBOX_IMAGE', 'must not be empty');
  if (s.userDataPvcName === '' && s.hostBaseDir === '') {
    throw settingError(
      'SBX_HOST_BASE_DIR',
      'hostPath user data (no USERDATA_PVC_NAME) lives at <base>/users/<user>/threads/<thread>/user-data: ' +
        'set SBX_HOST_BASE_DIR, or a THREADS_HOST_PATH named "threads" (its parent is the base)',
    );
  }
  const base = s.hostBaseDir.replace(/(.)\/+$/, '$1');
  const threads = s.threadsHostPath.replace(/(.)\/+$/, '$1');
  if (
    base !== '' &&
    threads !== '' &&
    (threads === base || base.startsWith(threads === '/' ? '/' : `${threads}/`))
  ) {
    throw settingError(
      'THREADS_HOST_PATH',
      `must lie below the host base ${base}, not be it or contain it: it holds the former layout's user data of every thread`,
    );
  }
}

const RESOURCE_SETTINGS: readonly [keyof ResourceQuantities, string, string, string][] = [
  ['cpu', 'cpu', 'SANDBOX_CPU_REQUEST', 'SANDBOX_CPU_LIMIT'],
  ['memory', 'memory', 'SANDBOX_MEMORY_REQUEST', 'SANDBOX_MEMORY_LIMIT'],
  [
    'ephemeralStorage',
    'ephemeral-storage',
    'SANDBOX_EPHEMERAL_STORAGE_REQUEST',
    'SANDBOX_EPHEMERAL_STORAGE_LIMIT',
  ],
];

/**
 * The API server refuses every Pod whose request is above its limit (`must be less than or equal
 * to cpu limit`), a limit of 0 included: 0 limits to nothing, it does not lift the limit. Checked
 * here, so such settings stop the start-up instead of failing every create. The error names both
 * settings and sits on the one that was set (the limit when only the limit was).
 */
function checkRequestsWithinLimits(s: ProvisionerSettings, sources: SettingSources): void {
  for (const [field, resource, requestName, limitName] of RESOURCE_SETTINGS) {
    const request = s.requests[field];
    const limit = s.limits[field];
    for (const [value, setting, name] of [
      [request, `requests.${field}`, requestName],
      [limit, `limits.${field}`, limitName],
    ] as const) {
      // Overrides from code bypass assign(): parse once more, naming the setting.
      try {
        const q = parseQuantity(value);
        if (isNegative(q)) throw new QuantityError('must be greater than or equal to 0');
      } catch (err) {
        if (!(err instanceof QuantityError)) throw err;
        throw settingError(sources.get(setting) ?? name, `${err.message}, got '${value}'`);
      }
    }
    if (compareQuantities(parseQuantity(request), parseQuantity(limit)) > 0) {
      const requestSource = sources.get(`requests.${field}`);
      const limitSource = sources.get(`limits.${field}`);
      const at =
        requestSource === undefined && limitSource !== undefined
          ? limitSource
          : (requestSource ?? requestName);
      throw settingError(
        at,
        `${requestName} (${request}) must be less than or equal to ${limitName} (${limit}): ` +
          `the API server refuses a ${resource} request above its limit, and a limit of 0 limits to nothing`,
      );
    }
  }
}
