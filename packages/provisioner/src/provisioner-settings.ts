import { ConfigError, errorMessage } from '@sbx/core';
import { closestKey } from '@sbx/core/internal';
import { posix } from 'node:path';
import { QuantityError, compareQuantities, isNegative, parseQuantity } from './kube-quantity.js';
import { dns1123LabelProblem, dns1123SubdomainProblem } from './kube-rules.js';
import { COMPAT, COMPAT_PROFILES, isCompatProfileName } from './compat-profiles.js';
import type { CompatProfileName } from './compat-profiles.js';

export const SERVICE_TYPES = ['NodePort', 'ClusterIP'] as const;
/** How sandboxes are made: Pods and Services directly, or agent-sandbox `Sandbox` objects. */
export const BACKENDS = ['pods', 'agent-sandbox'] as const;
export type ProvisionerBackendName = (typeof BACKENDS)[number];
/** The `agents.x-k8s.io` versions whose `Sandbox` schema this package writes (their shared fields). */
export const AGENT_SANDBOX_VERSIONS = ['v1alpha1', 'v1beta1'] as const;
export type SandboxServiceType = (typeof SERVICE_TYPES)[number];

/** Kubernetes quantities (`100m`, `256Mi`), as they go into the Pod spec. */
export interface ResourceQuantities {
  cpu: string;
  memory: string;
  ephemeralStorage: string;
}

export interface ProvisionerSettings {
  /**
   * Whose labels, namespace, paths and PVC prefix: `sbx`, or `deer-flow` (the reference
   * provisioner's, to take over a running reference deployment). It sets the defaults of
   * `namespace`, `threadsHostPath` and `userDataPvcSubpathPrefix`, which may still be set.
   */
  compat: CompatProfileName;
  /**
   * `pods` (default): one Pod and one Service per sandbox. `agent-sandbox`: one
   * kubernetes-sigs/agent-sandbox `Sandbox` per sandbox (its controller makes the Pod and a
   * headless Service); the HTTP API is the same.
   */
  backend: ProvisionerBackendName;
  /** The `agents.x-k8s.io` version the `agent-sandbox` backend speaks. */
  agentSandboxVersion: (typeof AGENT_SANDBOX_VERSIONS)[number];
  /**
   * `agent-sandbox` backend: each `Sandbox` gets `shutdownTime` this long after its create, so the
   * controller removes it even when every gateway has crashed. 0: no shutdown time.
   */
  shutdownAfterSeconds: number;
  /** Namespace of the sandbox Pods and Services; created when missing. */
  namespace: string;
  /** Check (and create) the namespace at start-up; needs cluster-scoped namespace access. */
  ensureNamespace: boolean;
  /** Image of the sandbox container. */
  sandboxImage: string;
  /**
   * The former user-data directory (`<thread>/user-data`, not keyed by user). Its parent is the
   * host base when it is named `threads`; nothing is mounted from it any more, and nothing may be
   * mounted from it or above it as an extra mount.
   */
  threadsHostPath: string;
  /**
   * The host base: thread user data lives at `users/<user>/threads/<thread>/user-data` below it
   * (hostPath mode), extra mounts must lie under it, and skills views are read from it. Empty: the
   * parent of `threadsHostPath` when that is named `threads`, else none — then the user data must
   * be on a PVC (`userDataPvcName`) and every extra mount is refused.
   */
  hostBaseDir: string;
  skillsPvcName: string;
  /** `{user_id}` / `{thread_id}` are replaced; empty: the PVC is mounted at its root. */
  skillsPvcSubpathTemplate: string;
  userDataPvcName: string;
  /** First segment of every sub-path on the user-data PVC (`<prefix>/users/<u>/threads/<t>/...`). */
  userDataPvcSubpathPrefix: string;
  containerPort: number;
  serviceType: SandboxServiceType;
  /** Host part of NodePort access URLs. */
  nodeHost: string;
  kubeconfigPath: string;
  /** Overrides the kubeconfig's server (and then does not verify its TLS certificate). */
  apiServer: string | undefined;
  /** Required on every `/api/*` request; empty: every `/api/*` request is refused. */
  apiKey: string;
  larkCliInitImage: string;
  larkCliBrokerImage: string;
  larkBrokerDenySubcommands: string;
  requests: ResourceQuantities;
  limits: ResourceQuantities;
  /** The Pods' RuntimeClass (`gvisor`, `kata`: a sandboxing runtime); empty: the node's default. */
  runtimeClassName: string;
  /**
   * A hard bound on each Pod's life: after this many seconds the kubelet stops it (phase
   * `Failed`, reason `DeadlineExceeded`) whatever the gateways do. 0: no bound.
   */
  activeDeadlineSeconds: number;
  /** Run the sandbox container as this uid (and `runAsNonRoot`); undefined: the image's user. */
  runAsUser: number | undefined;
  runAsGroup: number | undefined;
  listenHost: string;
  listenPort: number;
  /** How long a delete waits for the Pod to be gone before answering. */
  deleteTimeoutMs: number;
  /**
   * How long a create that meets a Pod or Service still being deleted (409 on an object with a
   * `deletionTimestamp`) waits for it to go before answering 503 with `Retry-After`.
   */
  terminatingWaitMs: number;
  /** Garbage collection of half-created sandboxes; 0 disables it. */
  gcIntervalMs: number;
  /** A Pod without Service (or the reverse) younger than this is left alone: a create may be under way. */
  gcGraceMs: number;
}

export const DEFAULT_PROVISIONER_SETTINGS: Readonly<ProvisionerSettings> = Object.freeze({
  compat: 'sbx',
  backend: 'pods',
  agentSandboxVersion: 'v1alpha1',
  shutdownAfterSeconds: 86_400,
  namespace: 'sbx',
  ensureNamespace: true,
  sandboxImage: 'ghcr.io/agent-infra/sandbox:latest',
  threadsHostPath: '/var/lib/sbx/threads',
  hostBaseDir: '',
  skillsPvcName: '',
  skillsPvcSubpathTemplate: '',
  userDataPvcName: '',
  userDataPvcSubpathPrefix: 'sbx',
  containerPort: 8080,
  serviceType: 'NodePort',
  nodeHost: 'host.docker.internal',
  kubeconfigPath: '/root/.kube/config',
  apiServer: undefined,
  apiKey: '',
  larkCliInitImage: '',
  larkCliBrokerImage: '',
  larkBrokerDenySubcommands: '',
  requests: Object.freeze({ cpu: '100m', memory: '256Mi', ephemeralStorage: '500Mi' }),
  limits: Object.freeze({ cpu: '1000m', memory: '1Gi', ephemeralStorage: '500Mi' }),
  runtimeClassName: '',
  activeDeadlineSeconds: 0,
  runAsUser: undefined,
  runAsGroup: undefined,
  listenHost: '127.0.0.1',
  listenPort: 8002,
  deleteTimeoutMs: 10_000,
  terminatingWaitMs: 10_000,
  gcIntervalMs: 60_000,
  gcGraceMs: 120_000,
});

/**
 * Environment variables and the setting each sets. The names of the reference provisioner are
 * kept, so an existing deployment's environment works unchanged; sbx's additions follow them.
 */
export const PROVISIONER_ENV: Readonly<Record<string, keyof ProvisionerSettings | string>> = {
  SANDBOX_COMPAT: 'compat',
  SANDBOX_BACKEND: 'backend',
  AGENT_SANDBOX_API_VERSION: 'agentSandboxVersion',
  SANDBOX_SHUTDOWN_AFTER_SECONDS: 'shutdownAfterSeconds',
  K8S_NAMESPACE: 'namespace',
  K8S_ENSURE_NAMESPACE: 'ensureNamespace',
  SANDBOX_IMAGE: 'sandboxImage',
  THREADS_HOST_PATH: 'threadsHostPath',
  DEER_FLOW_HOST_BASE_DIR: 'hostBaseDir',
  SBX_HOST_BASE_DIR: 'hostBaseDir',
  SKILLS_PVC_NAME: 'skillsPvcName',
  SKILLS_PVC_SUBPATH_TEMPLATE: 'skillsPvcSubpathTemplate',
  USERDATA_PVC_NAME: 'userDataPvcName',
  USERDATA_PVC_SUBPATH_PREFIX: 'userDataPvcSubpathPrefix',
  SANDBOX_CONTAINER_PORT: 'containerPort',
  SANDBOX_SERVICE_TYPE: 'serviceType',
  NODE_HOST: 'nodeHost',
  KUBECONFIG_PATH: 'kubeconfigPath',
  K8S_API_SERVER: 'apiServer',
  PROVISIONER_API_KEY: 'apiKey',
  LARK_CLI_INIT_IMAGE: 'larkCliInitImage',
  LARK_CLI_BROKER_IMAGE: 'larkCliBrokerImage',
  DEERFLOW_LARK_BROKER_DENY_SUBCOMMANDS: 'larkBrokerDenySubcommands',
  SANDBOX_CPU_REQUEST: 'requests.cpu',
  SANDBOX_MEMORY_REQUEST: 'requests.memory',
  SANDBOX_EPHEMERAL_STORAGE_REQUEST: 'requests.ephemeralStorage',
  SANDBOX_CPU_LIMIT: 'limits.cpu',
  SANDBOX_MEMORY_LIMIT: 'limits.memory',
  SANDBOX_EPHEMERAL_STORAGE_LIMIT: 'limits.ephemeralStorage',
  SANDBOX_RUNTIME_CLASS_NAME: 'runtimeClassName',
  SANDBOX_ACTIVE_DEADLINE_SECONDS: 'activeDeadlineSeconds',
  SANDBOX_RUN_AS_USER: 'runAsUser',
  SANDBOX_RUN_AS_GROUP: 'runAsGroup',
  PROVISIONER_HOST: 'listenHost',
  PROVISIONER_PORT: 'listenPort',
  SANDBOX_DELETE_TIMEOUT_SECONDS: 'deleteTimeoutMs',
  SANDBOX_TERMINATING_WAIT_SECONDS: 'terminatingWaitMs',
  SANDBOX_GC_INTERVAL_SECONDS: 'gcIntervalMs',
};

/** Where the block sits in an sbx config file (issue paths are written from it). */
const FILE_BLOCK = 'sandbox.provisioner';

/** The `sandbox.provisioner` block of an sbx config file: snake_case keys, the same settings. */
export type ProvisionerFileBlock = Record<string, unknown>;

const FILE_KEYS: Readonly<Record<string, string>> = {
  compat: 'compat',
  backend: 'backend',
  agent_sandbox_api_version: 'agentSandboxVersion',
  shutdown_after_seconds: 'shutdownAfterSeconds',
  namespace: 'namespace',
  ensure_namespace: 'ensureNamespace',
  sandbox_image: 'sandboxImage',
  threads_host_path: 'threadsHostPath',
  host_base_dir: 'hostBaseDir',
  skills_pvc_name: 'skillsPvcName',
  skills_pvc_subpath_template: 'skillsPvcSubpathTemplate',
  userdata_pvc_name: 'userDataPvcName',
  userdata_pvc_subpath_prefix: 'userDataPvcSubpathPrefix',
  container_port: 'containerPort',
  service_type: 'serviceType',
  node_host: 'nodeHost',
  kubeconfig_path: 'kubeconfigPath',
  api_server: 'apiServer',
  api_key: 'apiKey',
  lark_cli_init_image: 'larkCliInitImage',
  lark_cli_broker_image: 'larkCliBrokerImage',
  lark_broker_deny_subcommands: 'larkBrokerDenySubcommands',
  'requests.cpu': 'requests.cpu',
  'requests.memory': 'requests.memory',
  'requests.ephemeral_storage': 'requests.ephemeralStorage',
  'limits.cpu': 'limits.cpu',
  'limits.memory': 'limits.memory',
  'limits.ephemeral_storage': 'limits.ephemeralStorage',
  runtime_class_name: 'runtimeClassName',
  active_deadline_seconds: 'activeDeadlineSeconds',
  run_as_user: 'runAsUser',
  run_as_group: 'runAsGroup',
  listen_host: 'listenHost',
  listen_port: 'listenPort',
  delete_timeout_seconds: 'deleteTimeoutMs',
  terminating_wait_seconds: 'terminatingWaitMs',
  gc_interval_seconds: 'gcIntervalMs',
};

function settingError(path: string, message: string): ConfigError {
  return new ConfigError([{ path, message }], 'Invalid provisioner settings');
}

/** Where each setting got its value (an environment variable, a file key), for error messages. */
type SettingSources = Map<string, string>;

function integerIn(source: string, raw: string, min: number, max: number): number {
  const n = /^[0-9]+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw settingError(source, `must be an integer in ${min}..${max}, got '${raw}'`);
  }
  return n;
}

/** Sets one setting from its text form, validated; `source` names where the value came from. */
function assign(target: ProvisionerSettings, setting: string, raw: string, source: string): void {
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

function flatten(block: Record<string, unknown>, prefix = ''): [string, unknown][] {
  return Object.entries(block).flatMap(([k, v]) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? flatten(v as Record<string, unknown>, `${prefix}${k}.`)
      : [[`${prefix}${k}`, v] as [string, unknown]],
  );
}

/** Checks what no single value shows: the namespace, the paths, the sub-path template. */
function checkSettings(s: ProvisionerSettings, sources: SettingSources): void {
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
