// Where each setting comes from: the environment variable (the reference provisioner's names,
// then sbx's additions) and the snake_case key of the config file's `sandbox.provisioner` block.

import type { ProvisionerSettings } from './provisioner-settings-model.js';

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
  SANDBOX_EGRESS_PROXY: 'egressProxy',
};

/** Where the block sits in an sbx config file (issue paths are written from it). */
export const FILE_BLOCK = 'sandbox.provisioner';

/** The `sandbox.provisioner` block of an sbx config file: snake_case keys, the same settings. */
export type ProvisionerFileBlock = Record<string, unknown>;

export const FILE_KEYS: Readonly<Record<string, string>> = {
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
  egress_proxy: 'egressProxy',
};
