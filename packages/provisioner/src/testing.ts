// @sbx/provisioner/testing: a local Kubernetes API stand-in with a fake kubelet, for testing a
// provisioner deployment (or anything else that manages Pods and Services) without a cluster.
export { KubeStandin } from './testing/kube-standin.js';
export { invalidStatus } from './testing/kube-status.js';
export { matchesSelector } from './testing/label-selector.js';
export type {
  KubeFault,
  KubeRequestRecord,
  KubeResource,
  KubeStandinOptions,
  KubeVerb,
  PodServer,
  PodServerFactory,
} from './testing/kube-standin.js';
export {
  AGENT_SANDBOX_VERSIONS_SERVED,
  agentSandboxCauses,
  sandboxNameHash,
} from './testing/agent-sandbox-validation.js';
export {
  kubeObjectProblems,
  podCauses,
  podSpecCauses,
  serviceCauses,
} from './testing/kube-validation.js';
