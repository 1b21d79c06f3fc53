// @sbx/provisioner: the HTTP service behind @sbx/aio's remote backend, creating one Kubernetes Pod
// and Service per sandbox.

export { startProvisioner } from './provisioner-server.js';
export { jsonLineLogger, runProvisionerProcess, serveProvisioner } from './provisioner-main.js';
export type { ServeProvisionerOptions } from './provisioner-main.js';
export { validateConfigBlock } from './provisioner-config-block.js';
export type { RunningProvisioner, StartProvisionerOptions } from './provisioner-server.js';
export {
  AGENT_SANDBOX_VERSIONS,
  BACKENDS,
  DEFAULT_PROVISIONER_SETTINGS,
  PROVISIONER_ENV,
  SERVICE_TYPES,
  resolveProvisionerSettings,
} from './provisioner-settings.js';
export type {
  ProvisionerBackendName,
  ProvisionerFileBlock,
  ProvisionerSettings,
  ResourceQuantities,
  SandboxServiceType,
  SettingsSources,
} from './provisioner-settings.js';
export {
  MAX_REQUEST_BODY_BYTES,
  apiKeyMatches,
  createProvisionerHandler,
} from './provisioner-http.js';
export type {
  ProvisionerCapabilitiesResponse,
  ProvisionerHandlerOptions,
} from './provisioner-http.js';
export { SandboxPods } from './sandbox-pods.js';
export { AgentSandboxes, sandboxPhase } from './agent-sandboxes.js';
export type { AgentSandboxesOptions } from './agent-sandboxes.js';
export type {
  DeleteResponse,
  GarbageReport,
  ProvisionerBackend,
  SandboxResponse,
} from './provisioner-backend.js';
export type { KubeSandboxBackendOptions } from './kube-sandbox-backend.js';
export { TERMINATING_RETRY_AFTER_SECONDS } from './create-or-await.js';
export type { SandboxPodsOptions } from './sandbox-pods.js';
export { SANDBOX_ID_PATTERN, parseCreateRequest } from './create-request.js';
export type {
  CreateSandboxRequest,
  ExtraMountRequest,
  SandboxEgressMode,
} from './create-request.js';
export { egressProxyProblem } from './egress-proxy-setting.js';
export { networkPolicyName, sandboxNetworkPolicy } from './sandbox-network-policy.js';
export { egressProxyEnv, egressRoute } from './sandbox-egress-route.js';
export type { EgressRoute } from './sandbox-egress-route.js';
export { safeSubPath, validateExtraMounts } from './extra-mount-rules.js';
export type { ValidatedExtraMount } from './extra-mount-rules.js';
export { larkPattern, planSandboxVolumes } from './sandbox-volumes.js';
export type { SandboxVolumePlan } from './sandbox-volumes.js';
export { COMPAT, COMPAT_PROFILES, isCompatProfileName } from './compat-profiles.js';
export type { CompatProfile, CompatProfileName } from './compat-profiles.js';
export { containerSecurityContext } from './container-security.js';
export {
  SANDBOX_APP_LABEL,
  SANDBOX_ID_LABEL,
  SANDBOX_SELECTOR,
  accessUrl,
  podName,
  sandboxLabels,
  sandboxPod,
  sandboxSelector,
  sandboxService,
  serviceName,
} from './sandbox-objects.js';
export {
  AGENT_SANDBOX_GROUP,
  AGENT_SANDBOX_PERMISSIONS,
  AGENT_SANDBOX_PLURAL,
  KUBE_PERMISSIONS,
  NETWORKING_PERMISSIONS,
  connectKubeApi,
  toKubeApiError,
  waitForKubeconfig,
} from './kube-api.js';
export type { ConnectKubeOptions, KubeApi } from './kube-api.js';
export { KubeApiError, ProvisionerHttpError } from './provisioner-errors.js';
export {
  MAX_QUANTITY_LENGTH,
  QuantityError,
  compareQuantities,
  parseQuantity,
} from './kube-quantity.js';
export type { Quantity } from './kube-quantity.js';
export {
  COMPUTE_RESOURCES,
  dns1035LabelProblem,
  dns1123LabelProblem,
  dns1123SubdomainProblem,
  labelCauses,
  labelKeyProblem,
  labelValueProblem,
  resourceCauses,
} from './kube-rules.js';
export type { ComputeResource, KubeCause, ResourceRequirements } from './kube-rules.js';
export type { FieldProblem } from './provisioner-errors.js';
export type * from './kube-objects.js';
