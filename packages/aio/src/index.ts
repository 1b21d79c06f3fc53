// Public API of @sbx/aio: the all-in-one sandbox client, its container backends and the
// provisioner client.

// --- sandbox client
export {
  AioSandbox,
  DEFAULT_NO_CHANGE_TIMEOUT_SECONDS,
  DEFAULT_ENV_COMMAND_TIMEOUT_SECONDS,
} from './aio-sandbox.js';
export type { AioSandboxOptions } from './aio-sandbox.js';
export { BASH_EXEC_UNSUPPORTED_MESSAGE } from './bash-exec-unsupported.js';
export { ERROR_OBSERVATION_SIGNATURE, hasErrorObservation } from './error-observation.js';
export { SCOPE_NO_LONGER_ACTIVE_MESSAGE } from './command-scopes.js';
export { MAX_DOWNLOAD_BYTES, checkDownloadPath } from './download-path.js';
export { assembleOutput, frameShellCommand, parseFramedOutput } from './command-output.js';
export type { CommandOutcome, FramedCommand } from './command-output.js';

// --- transport
export { shouldTrustEnvProxy } from './proxy-policy.js';
export { AioHttpClient, DEFAULT_REQUEST_TIMEOUT_MS } from './aio-http.js';
export type { AioHttpClientOptions, AioRequestOptions } from './aio-http.js';
export { AioHttpError } from './aio-http-error.js';

// --- backends
export type {
  SandboxBackend,
  SandboxHealth,
  CreateSandboxRequest,
  BackendCallOptions,
  MountSpec,
} from './sandbox-backend.js';
export {
  sandboxInfoFromRecord,
  sandboxInfoToRecord,
  parseDockerTimestamp,
} from './sandbox-info.js';
export type { SandboxInfo, SandboxInfoRecord } from './sandbox-info.js';
export {
  waitForSandboxReady,
  CREATE_READY_TIMEOUT_MS,
  DISCOVER_READY_TIMEOUT_MS,
} from './readiness.js';
export type { WaitForReadyOptions } from './readiness.js';

// --- local containers
export {
  LocalContainerBackend,
  DEFAULT_AIO_IMAGE,
  DEFAULT_CONTAINER_PREFIX,
  DEFAULT_BASE_PORT,
  DEFAULT_STOP_TIMEOUT_MS,
  DEFAULT_STOP_GRACE_SECONDS,
  DEFAULT_INSPECT_TIMEOUT_MS,
  DEFAULT_LIST_TIMEOUT_MS,
  isDefinitelyMissing,
} from './local-container-backend.js';
export type { LocalContainerBackendOptions } from './local-container-backend.js';
export {
  detectContainerRuntime,
  dockerConnectionOptions,
  fsRuntimeProbe,
  DOCKER_SOCKET_PATHS,
} from './container-runtime.js';
export type {
  ContainerRuntimeKind,
  DetectedRuntime,
  RuntimeEnvironment,
  RuntimeProbe,
} from './container-runtime.js';
export {
  resolveDockerBindHost,
  resolveSandboxHost,
  SANDBOX_HOST_ENV,
  SANDBOX_BIND_HOST_ENV,
} from './docker-bind-host.js';
export {
  buildContainerSpec,
  describeContainerSpec,
  AIO_CONTAINER_PORT,
  AIO_PORT_ENV,
  LABEL_MANAGED,
  LABEL_SANDBOX_ID,
  LABEL_PORT,
  LABEL_SKILLS_ROOT,
} from './container-spec.js';
export type { ContainerNetworkMode, ContainerSpecInput } from './container-spec.js';
export { PortAllocator, PORT_SEARCH_SPAN, canBind } from './port-allocator.js';
export type {
  DockerClient,
  DockerContainerHandle,
  DockerContainerSummary,
  DockerCreateOptions,
  DockerInspectInfo,
  DockerMount,
  DockerPortBinding,
} from './docker-client.js';

// --- remote provisioner
export {
  RemoteSandboxBackend,
  PROVISIONER_CREATE_TIMEOUT_MS,
  PROVISIONER_DESTROY_TIMEOUT_MS,
  PROVISIONER_QUERY_TIMEOUT_MS,
} from './remote-sandbox-backend.js';
export type {
  RemoteSandboxBackendOptions,
  ProvisionerCapabilities,
} from './remote-sandbox-backend.js';
export { provisionerExtraMounts } from './provisioner-mounts.js';
// The allowlist and skills-root rules live in core, shared with @sbx/provisioner; re-exported so
// existing imports from @sbx/aio keep working.
export { canonicalSkillsRoot, provisionerExtraMountPaths } from '@sbx/core';
export { PROVISIONER_MAX_EXTRA_MOUNTS, SKILL_MOUNT_CATEGORIES } from '@sbx/core/internal';
export type { ProvisionerMount } from '@sbx/core';

// --- provider
export { AioSandboxProvider, createAioProvider } from './aio-sandbox-provider.js';
export type {
  AioSandboxProviderInit,
  AioProviderSnapshot,
  ReconcileSummary,
  AioSandboxSummary,
  AioListSandboxesOptions,
  AioReapOrphansOptions,
  AioOrphanReapReport,
} from './aio-sandbox-provider.js';
export {
  resolveAioSettings,
  AIO_CONFIG_KEYS,
  DEFAULT_RECONCILE_MAX_ITEMS,
  DEFAULT_RECONCILE_MAX_SECONDS,
  REFERENCE_HOST_BASE_DIR_ENV,
  SBX_HOST_BASE_DIR_ENV,
} from './aio-provider-config.js';
export type { AioSettings, ReconcileSettings } from './aio-provider-config.js';
export { dedupeMounts, planSandboxMounts, prepareSandboxMounts } from './sandbox-mounts.js';
export type { MountGroup, SandboxMountPlanInput } from './sandbox-mounts.js';

// `use: "@sbx/aio"` loads this through core's provider loader.
export { AioSandboxProvider as default } from './aio-sandbox-provider.js';
export { validateConfigBlock } from './aio-provider-config.js';
